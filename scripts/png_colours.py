#!/usr/bin/env python3
"""Counts pixels of given colours in a PNG (8-bit RGB/RGBA, non-interlaced) using only the
standard library, and fails unless each colour covers at least MIN_PIXELS pixels.
Usage: png_colours.py FILE '#rrggbb' ['#rrggbb' ...]"""
import struct, sys, zlib

MIN_PIXELS = 400   # a bar chart of a few models draws thousands of pixels per colour


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or colour not in (2, 6) or interlace:
                sys.exit(f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return rows, channels


def main():
    path, colours = sys.argv[1], sys.argv[2:]
    rows, channels = decode(path)
    wanted = {tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)): c for c in colours}
    counts = dict.fromkeys(wanted, 0)
    for row in rows:
        for x in range(0, len(row), channels):
            rgb = (row[x], row[x + 1], row[x + 2])
            if rgb in counts:
                counts[rgb] += 1
    missing = [wanted[k] for k, n in counts.items() if n < MIN_PIXELS]
    print("pixels per colour: " + ", ".join(f"{wanted[k]} {n}" for k, n in counts.items()))
    if missing:
        sys.exit(f"{path}: colours missing from the screenshot: {', '.join(missing)}")
    print(f"html-report: {len(colours)} of {len(colours)} charts visible")


main()
