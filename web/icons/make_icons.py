#!/usr/bin/env python3
"""Writes the dashboard's PNG icons (192, 512, and a 512 maskable one) with the standard
library only (zlib for the PNG's deflate). Run it from anywhere; the PNGs are committed, so
building the daemon never needs Python.

The drawing: a rounded dark square, a white reclining "L" (a lazy boy on his chair) and a
green dot, the dashboard's sign of a live agent. The maskable icon fills the whole square
and keeps the drawing inside the middle 80% (the safe zone launchers may crop to).
"""
import os
import struct
import zlib

BG = (22, 27, 34)
FG = (240, 246, 252)
DOT = (46, 160, 67)


def inside_rounded(x, y, size, radius):
    cx = min(max(x, radius), size - 1 - radius)
    cy = min(max(y, radius), size - 1 - radius)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2


def pixel(x, y, size, maskable):
    # Coordinates of the drawing in a unit square, shrunk into the safe zone when maskable.
    scale = 0.8 if maskable else 1.0
    u = ((x + 0.5) / size - 0.5) / scale + 0.5
    v = ((y + 0.5) / size - 0.5) / scale + 0.5
    if not maskable and not inside_rounded(x, y, size, size * 0.2):
        return None
    # The "L": an upright bar and a seat, tilted back a little.
    lean = (0.7 - v) * 0.18
    if 0.26 + lean <= u <= 0.38 + lean and 0.2 <= v <= 0.72:
        return FG
    if 0.26 <= u <= 0.76 and 0.62 <= v <= 0.74:
        return FG
    if (u - 0.68) ** 2 + (v - 0.34) ** 2 <= 0.1 ** 2:
        return DOT
    return BG


def png(size, maskable):
    rows = []
    for y in range(size):
        row = bytearray([0])
        for x in range(size):
            color = pixel(x, y, size, maskable)
            row += bytes(color + (255,)) if color else b"\0\0\0\0"
        rows.append(bytes(row))
    raw = b"".join(rows)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


here = os.path.dirname(os.path.abspath(__file__))
for name, size, maskable in [("icon-192.png", 192, False), ("icon-512.png", 512, False),
                             ("icon-maskable-512.png", 512, True)]:
    with open(os.path.join(here, name), "wb") as f:
        f.write(png(size, maskable))
    print(name, os.path.getsize(os.path.join(here, name)), "bytes")
