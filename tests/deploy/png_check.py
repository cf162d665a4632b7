#!/usr/bin/env python3
"""png_check.py SHOT.png: checks a screenshot of `crucible report` shows its plots.

Decodes the PNG with the standard library only (zlib, PNG filters), then:
  - the plot palette's colours (report.c s_palette) cover enough pixels;
  - they appear in at least MIN_BANDS separate 150-px horizontal bands, so
    several plots (not one) were drawn;
  - the page is not blank: at least 1% of pixels differ from the background.
Exits 0 when all hold, else 1 with the reason."""
import struct
import sys
import zlib

PALETTE = [(0x4E, 0x79, 0xA7), (0xF2, 0x8E, 0x2B), (0xE1, 0x57, 0x59), (0x76, 0xB7, 0xB2),
           (0x59, 0xA1, 0x4F), (0xED, 0xC9, 0x48)]
MIN_PALETTE_PIXELS = 2000
MIN_BANDS = 5
BAND = 150


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main():
    w, h, bpp, rows = decode(sys.argv[1])
    bg = rows[0][0:3]
    near = lambda p, q: all(abs(p[i] - q[i]) <= 12 for i in range(3))
    painted = palette = 0
    bands = set()
    for y in range(0, h, 2):
        r = rows[y]
        for x in range(0, w, 2):
            px = r[x * bpp:x * bpp + 3]
            if px != bg:
                painted += 1
            if any(near(px, c) for c in PALETTE):
                palette += 4  # sampled every other pixel each way
                bands.add(y // BAND)
    total = (w // 2) * (h // 2)
    print("png_check: %dx%d, %.1f%% painted, %d palette pixels in %d bands of %d px"
          % (w, h, 100.0 * painted / total, palette, len(bands), BAND))
    if painted < total / 100:
        print("png_check: the page is blank")
        return 1
    if palette < MIN_PALETTE_PIXELS:
        print("png_check: too few plot pixels (< %d)" % MIN_PALETTE_PIXELS)
        return 1
    if len(bands) < MIN_BANDS:
        print("png_check: plots in only %d bands (< %d)" % (len(bands), MIN_BANDS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
