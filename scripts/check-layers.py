#!/usr/bin/env python3
"""What the compiler cannot check about the layers (README "Architecture"). SwiftPM targets
enforce the walls between layers; inside a target, folders still depend one way: a file may
use types declared in its own folder or in earlier ones, never in a later one. Folders on
one line are siblings and must not use each other (the model families: a general model
never reaches into the context-aware family's machinery). Exits 1 and lists every edge
found. Usage: scripts/check-layers.py"""
import os, re, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from swift_source import code

SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Sources')
# Per target, its folders in data-flow order; a tuple holds siblings.
TARGETS = {
    'RecBenchData': ['Config', 'Data', ('Convert', 'Samples')],
    'RecBenchModels': ['SharedKeys.swift', 'Training', ('General', 'ContextAware', 'Sequential'), 'ModelRegistry.swift'],
    'RecBenchRuns': ['Results', 'Experiment', 'Tuning', 'Sweep'],
}
DECLARATION = re.compile(r'^\s*(?:(?:public|package|final|indirect)\s+)*(?:struct|enum|class|protocol|actor)\s+(\w+)', re.M)


def files(root, entry):
    path = os.path.join(root, entry)
    if os.path.isfile(path):
        yield path
    for folder, _, names in os.walk(path):
        for name in sorted(names):
            if name.endswith('.swift'):
                yield os.path.join(folder, name)


def check(target, layers):
    root = os.path.join(SOURCES, target)
    groups = [(i, entry) for i, layer in enumerate(layers) for entry in (layer if isinstance(layer, tuple) else (layer,))]
    declared = {}   # type name -> (layer index, folder)
    for index, entry in groups:
        for path in files(root, entry):
            for name in DECLARATION.findall(code(path)):
                declared.setdefault(name, (index, entry))
    found = []
    for index, entry in groups:
        for path in files(root, entry):
            text = code(path)
            for name, (owner, folder) in declared.items():
                later = owner > index or (owner == index and folder != entry)
                if later and re.search(r'\b%s\b' % re.escape(name), text):
                    found.append(f'{target}/{os.path.relpath(path, root)} ({entry}) uses {name} ({folder})')
    return found


def main():
    found = [line for target, layers in TARGETS.items() for line in check(target, layers)]
    for line in found:
        print(line)
    print(f'{len(found)} back-edge(s) inside {len(TARGETS)} targets')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
