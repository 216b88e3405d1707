#!/usr/bin/env python3
"""extension/media/icon.png, the marketplace icon (128x128): a sun over a well, drawn with the standard library.

    python extension/build/make_icon.py     # rewrites the PNG; it is committed, so run it only to change the icon
"""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

SIZE = 128
BACKGROUND = (0x1E, 0x1B, 0x2E)
SUN = (0xF5, 0xB8, 0x2E)
WELL = (0x6C, 0x8C, 0xD5)
OUT = Path(__file__).resolve().parents[1] / "media" / "icon.png"


def coverage(inside, x: int, y: int, samples: int = 4) -> float:
    """How much of pixel (x, y) `inside(px, py)` covers, by supersampling (smooth edges)."""
    hits = sum(inside(x + (i + 0.5) / samples, y + (j + 0.5) / samples)
               for i in range(samples) for j in range(samples))  # fmt: skip
    return hits / samples**2


def rounded_square(px: float, py: float, radius: float = 24) -> bool:
    cx = min(max(px, radius), SIZE - radius)
    cy = min(max(py, radius), SIZE - radius)
    return (px - cx) ** 2 + (py - cy) ** 2 <= radius**2


def sun(px: float, py: float) -> bool:
    dx, dy = px - 64, py - 54
    r = math.hypot(dx, dy)
    if r <= 22:
        return True
    ray = (math.atan2(dy, dx) / (2 * math.pi) * 12) % 1  # twelve rays
    return 28 <= r <= 40 and abs(ray - 0.5) < 0.16 and py < 84


def well(px: float, py: float) -> bool:
    return 30 <= px <= 98 and (88 <= py <= 96 or (100 <= py <= 106 and 40 <= px <= 88))


def pixel(x: int, y: int) -> tuple[int, int, int, int]:
    alpha = coverage(rounded_square, x, y)
    color = BACKGROUND
    for shape, tint in ((sun, SUN), (well, WELL)):
        amount = coverage(shape, x, y)
        color = tuple(round(c * (1 - amount) + t * amount) for c, t in zip(color, tint, strict=True))
    return (*color, round(alpha * 255))


def png(rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    raw = b"".join(b"\x00" + row for row in rows)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


if __name__ == "__main__":
    OUT.write_bytes(png([b"".join(bytes(pixel(x, y)) for x in range(SIZE)) for y in range(SIZE)]))
    print(f"{OUT}: {OUT.stat().st_size} bytes")
