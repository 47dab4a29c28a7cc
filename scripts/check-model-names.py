#!/usr/bin/env python3
"""Checks that a model is one file: no Swift file other than the model's own file, its own
tests (`Tests/**/<Model>Tests.swift`) and the registry names a registered model's type in
code (comments and string literals do not count: `--model BPR` in a CLI test names the
model, not the type). Everything else that lists models must derive the list from
`ModelRegistry.models`. Exits 1 and lists every place found.
Usage: scripts/check-model-names.py"""
import os, re, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from swift_source import code

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
DECLARATION = r'^\s*(?:public\s+|final\s+)*(?:struct|enum|class|actor)\s+%s\b'


def swift_files():
    for top in ('Sources', 'Tests'):
        for folder, _, names in os.walk(os.path.join(ROOT, top)):
            for name in sorted(names):
                if name.endswith('.swift'):
                    yield os.path.relpath(os.path.join(folder, name), ROOT)


def main():
    registry = next((p for p in swift_files() if p.endswith('ModelRegistry.swift')), None)
    if registry is None:
        print('ModelRegistry.swift not found')
        return 1
    listed = re.search(r'models:\s*\[[^\]]*\]\s*=\s*\[([\s\S]*?)\]', code(registry))
    models = re.findall(r'(\w+)\.self', listed.group(1)) if listed else []
    if not models:
        print(f'{registry}: no `X.self` entries found in ModelRegistry.models')
        return 1
    files = list(swift_files())
    texts = {path: code(path) for path in files}
    homes = {}
    for model in models:
        homes[model] = [p for p in files if re.search(DECLARATION % re.escape(model), texts[p], re.M)]
    found = []
    for model in models:
        own = set(homes[model]) | {registry}
        own |= {p for p in files if p.startswith('Tests') and os.path.basename(p).startswith(model + 'Tests')}
        for path in files:
            if path not in own and re.search(r'\b%s\b' % re.escape(model), texts[path]):
                line = next(i + 1 for i, l in enumerate(texts[path].split('\n')) if re.search(r'\b%s\b' % re.escape(model), l))
                found.append(f'{path}:{line}: names model type {model} (declared in {", ".join(homes[model]) or "?"})')
    for line in found:
        print(line)
    print(f'{len(found)} place(s) outside a model\'s own files name a model type ({len(models)} models)')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
