"""Draws the bundle's icon, a PNG written with zlib and struct alone: a rounded square shaded
from deep blue to teal, holding a white ring around a dot (a memory, kept). Edges are smoothed
by distance, so the icon reads cleanly at the small sizes clients show it at.

`python3 packaging/mcpb/icon.py OUT.png [SIZE]` writes it; the bundle builder imports `png()`.
"""

from __future__ import annotations

import math
import struct
import sys
import zlib


def _coverage(distance: float) -> float:
    """How much of a pixel lies inside a shape whose edge is `distance` pixels away (negative
    inside): a one-pixel ramp across the edge."""
    return min(1.0, max(0.0, 0.5 - distance))


def _mix(a: tuple, b: tuple, t: float) -> tuple:
    return tuple(x + (y - x) * t for x, y in zip(a, b))


def _pixel(x: float, y: float, size: int) -> tuple:
    half = size / 2.0
    corner = size * 0.22
    # Signed distance to the rounded square filling the image (less a one-pixel margin).
    qx = abs(x - half) - (half - 1 - corner)
    qy = abs(y - half) - (half - 1 - corner)
    outside = math.hypot(max(qx, 0.0), max(qy, 0.0)) + min(max(qx, qy), 0.0) - corner
    alpha = _coverage(outside)
    if alpha == 0.0:
        return (0, 0, 0, 0)
    top, bottom = (24, 46, 112), (18, 150, 148)
    colour = _mix(top, bottom, y / size)
    r = math.hypot(x - half, y - half)
    ring = _coverage(abs(r - size * 0.27) - size * 0.055)
    dot = _coverage(r - size * 0.11)
    white = max(ring, dot)
    colour = _mix(colour, (255, 255, 255), white)
    return tuple(int(round(c)) for c in colour) + (int(round(alpha * 255)),)


def png(size: int = 256) -> bytes:
    rows = bytearray()
    for row in range(size):
        rows.append(0)  # filter type 0: the row as it is
        for col in range(size):
            rows.extend(_pixel(col + 0.5, row + 0.5, size))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
            + chunk(b"IEND", b""))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: icon.py OUT.png [SIZE]")
    with open(sys.argv[1], "wb") as f:
        f.write(png(int(sys.argv[2]) if len(sys.argv) == 3 else 256))
