#!/usr/bin/env python3
"""The style limits the compiler does not check: lists Swift functions, initialisers and
subscripts longer than a limit (default 60 lines, counted from the declaration to its closing
brace), and source lines longer than 160 characters. Exits 1 when any is found.
Usage: scripts/long-functions.py [--max N] [DIR ...] (default: Sources Tests)"""
import os, re, sys

DECLARATION = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|private|fileprivate|internal|static|mutating|override|final|nonisolated|@inlinable|@inline\(__always\))\s+)*(?:func\s+[^\s(<]+|init[?!]?|subscript)\s*[(<]')


def braces(line):
    """The change in brace depth on a line, skipping string literals and // comments."""
    depth, i, in_string = 0, 0, False
    while i < len(line):
        c = line[i]
        if in_string:
            if c == '\\':
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif line.startswith('//', i):
            break
        elif c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
        i += 1
    return depth


def scan(path, limit):
    lines = open(path, encoding='utf-8').read().split('\n')
    found = []
    for start, line in enumerate(lines):
        if not DECLARATION.match(line):
            continue
        depth, opened = 0, False
        for end in range(start, len(lines)):
            delta = braces(lines[end])
            if '{' in lines[end]:
                opened = True
            depth += delta
            if opened and depth <= 0:
                length = end - start + 1
                if length > limit:
                    name = line.strip().split('{')[0].strip()
                    found.append((length, f'{path}:{start + 1}', name[:100]))
                break
    return found


LINE_LIMIT = 160


def long_lines(path):
    """(path:line, length) of every line over LINE_LIMIT characters."""
    with open(path, encoding='utf-8') as f:
        return [(f'{path}:{n}', len(line.rstrip('\n'))) for n, line in enumerate(f, 1) if len(line.rstrip('\n')) > LINE_LIMIT]


def main():
    args, limit = sys.argv[1:], 60
    if args[:1] == ['--max']:
        limit, args = int(args[1]), args[2:]
    found, lines = [], []
    for root in args or ['Sources', 'Tests']:
        for folder, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith('.swift'):
                    found += scan(os.path.join(folder, f), limit)
                    lines += long_lines(os.path.join(folder, f))
    for length, where, name in sorted(found, reverse=True):
        print(f'{length:4d} lines  {where}  {name}')
    for where, length in lines:
        print(f'{length:4d} chars  {where}')
    print(f'{len(found)} function(s) over {limit} lines, {len(lines)} line(s) over {LINE_LIMIT} characters')
    sys.exit(1 if found or lines else 0)


main()
