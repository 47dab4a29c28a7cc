#!/usr/bin/env python3
"""Checks that RecBenchCore's folders depend one way (README "Architecture"): a file may use
types declared in its own layer or in earlier ones, never in a later one. SwiftPM targets
enforce the walls between Linalg, Autodiff, RecBenchCore and the CLI; this script enforces
the order of the folders inside RecBenchCore. Exits 1 and lists every back-edge found.
Usage: scripts/check-layers.py"""
import os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Sources', 'RecBenchCore')
# Layers in data-flow order; a layer may use the ones before it.
LAYERS = [
    ('Support', ['Support', 'RecBenchError.swift']),
    ('Config', ['Config']),
    ('Data', ['Data', 'Convert', 'Samples']),
    ('Contract', ['Contract']),
    ('Training', ['Training']),
    ('Models', ['Models']),
    ('Evaluation', ['Evaluation']),
    ('Results', ['Results']),
    ('Experiment', ['Experiment', 'Sweep', 'Benchmark']),
]
DECLARATION = re.compile(r'^\s*(?:public\s+|final\s+|indirect\s+)*(?:struct|enum|class|protocol|actor)\s+(\w+)', re.M)


def files(entries):
    for entry in entries:
        path = os.path.join(ROOT, entry)
        if os.path.isfile(path):
            yield path
        for folder, _, names in os.walk(path):
            for name in sorted(names):
                if name.endswith('.swift'):
                    yield os.path.join(folder, name)


def code(path):
    """The file without comments and string literals."""
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'"""[\s\S]*?"""', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r'//[^\n]*', '', text)


def main():
    declared = {}   # type name -> layer index
    for index, (_, entries) in enumerate(LAYERS):
        for path in files(entries):
            for name in DECLARATION.findall(code(path)):
                declared.setdefault(name, index)
    found = []
    for index, (layer, entries) in enumerate(LAYERS):
        for path in files(entries):
            text = code(path)
            for name, owner in declared.items():
                if owner > index and re.search(r'\b%s\b' % re.escape(name), text):
                    found.append(f'{os.path.relpath(path, ROOT)} ({layer}) uses {name} ({LAYERS[owner][0]})')
    for line in found:
        print(line)
    print(f'{len(found)} back-edge(s) across {len(LAYERS)} layers')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
