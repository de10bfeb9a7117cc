#!/usr/bin/env python3
"""Writes the PNG fixtures of the images tests (tests/unit/sandbox-agent/png.c).

A small PNG encoder on the standard library only, so that every colour type,
bit depth and Adam7 interlacing can be produced exactly (Pillow cannot write
interlaced or 16-bit RGB files).  Run it from anywhere; it writes next to
itself.  The files are committed; run again only to change them.
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

GRAY, RGB, PALETTE, GRAY_ALPHA, RGBA = 0, 2, 3, 4, 6
CHANNELS = {GRAY: 1, RGB: 3, PALETTE: 1, GRAY_ALPHA: 2, RGBA: 4}
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
         (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def pack_row(samples, depth):
    if depth == 8:
        return bytes(samples)
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    out, acc, nbits = bytearray(), 0, 0
    for s in samples:
        acc = (acc << depth) | s
        nbits += depth
        if nbits == 8:
            out.append(acc)
            acc, nbits = 0, 0
    if nbits:
        out.append(acc << (8 - nbits))
    return bytes(out)


def raw_data(w, h, ctype, depth, pix, interlace):
    bpp = max(1, CHANNELS[ctype] * depth // 8)

    def rows(xs, ys):
        data = bytearray()
        for y in ys:
            samples = []
            for x in xs:
                samples.extend(pix(x, y))
            line = pack_row(samples, depth)
            # Filter "Sub" (1): gradients become runs that deflate well.
            data.append(1)
            data.extend((line[i] - (line[i - bpp] if i >= bpp else 0)) & 0xFF
                        for i in range(len(line)))
        return data

    if not interlace:
        return bytes(rows(range(w), range(h)))
    data = bytearray()
    for x0, y0, dx, dy in ADAM7:
        xs, ys = range(x0, w, dx), range(y0, h, dy)
        if len(xs) and len(ys):
            data.extend(rows(xs, ys))
    return bytes(data)


def write_png(name, w, h, ctype, depth, pix, interlace=False, plte=None,
              trns=None, raw=None):
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 1 if interlace else 0)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
    if plte is not None:
        out += chunk(b"PLTE", b"".join(bytes(c) for c in plte))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    if raw is None:
        raw = raw_data(w, h, ctype, depth, pix, interlace)
    out += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(out)
    return out


def gradient(ctype, depth):
    """A pattern that uses every channel: x, y and their sum."""
    top = (1 << depth) - 1

    def pix(x, y):
        k = 257 if depth == 16 else 1
        a = (x * 7 * k) % (top + 1)
        b = (y * 5 * k) % (top + 1)
        c = ((x + y) * 3 * k) % (top + 1)
        if ctype == GRAY:
            return (a,)
        if ctype == GRAY_ALPHA:
            return (a, top - b // 2)
        if ctype == RGB:
            return (a, b, c)
        if ctype == RGBA:
            return (a, b, c, top - c // 3)
        return (((x // 3) + (y // 3)) % (1 << depth),)
    return pix


def main():
    # Every colour type and bit depth libpng has to normalise, some interlaced.
    write_png("gray1.png", 64, 48, GRAY, 1, lambda x, y: ((x // 4 + y // 4) % 2,))
    write_png("gray2.png", 33, 17, GRAY, 2, lambda x, y: ((x + y) % 4,))
    write_png("gray8.png", 300, 200, GRAY, 8, gradient(GRAY, 8))
    write_png("gray8_trns.png", 120, 80, GRAY, 8, gradient(GRAY, 8),
              trns=struct.pack(">H", 0))
    write_png("gray16_interlaced.png", 257, 131, GRAY, 16, gradient(GRAY, 16),
              interlace=True)
    write_png("gray_alpha8.png", 150, 100, GRAY_ALPHA, 8, gradient(GRAY_ALPHA, 8))
    write_png("rgb8.png", 320, 240, RGB, 8, gradient(RGB, 8))
    write_png("rgb8_interlaced.png", 203, 97, RGB, 8, gradient(RGB, 8),
              interlace=True)
    write_png("rgb16.png", 160, 120, RGB, 16, gradient(RGB, 16))
    write_png("rgba8.png", 240, 180, RGBA, 8, gradient(RGBA, 8))
    write_png("rgba16_interlaced.png", 130, 190, RGBA, 16, gradient(RGBA, 16),
              interlace=True)
    pal16 = [(i * 16, 255 - i * 16, (i * 40) % 256) for i in range(16)]
    write_png("palette4_trns.png", 90, 60, PALETTE, 4, gradient(PALETTE, 4),
              plte=pal16, trns=bytes([0, 128] + [255] * 14))
    pal256 = [(i, (i * 3) % 256, 255 - i) for i in range(256)]
    write_png("palette8_interlaced.png", 211, 77, PALETTE, 8,
              lambda x, y: ((x + 2 * y) % 256,), interlace=True, plte=pal256)
    write_png("tall.png", 50, 2000, RGB, 8, gradient(RGB, 8))

    # Known averages: a uniform colour stays itself, a fine checkerboard
    # becomes mid grey, and transparent pixels lend no colour to their
    # opaque neighbours.
    write_png("solid.png", 400, 300, RGB, 8, lambda x, y: (200, 100, 50))
    write_png("checker.png", 200, 200, GRAY, 1, lambda x, y: ((x + y) % 2,))
    write_png("halfalpha.png", 200, 100, RGBA, 8,
              lambda x, y: (0, 255, 0, 0) if x < 100 else (0, 0, 255, 255))

    # Hostile files.  A bomb: a valid header declaring 100000 x 100000
    # pixels, with a short, highly compressed stream of zeros behind it.
    row = b"\x00" * (1 + 100000 * 4)
    write_png("bomb.png", 100000, 100000, RGBA, 8, None, raw=row * 64)
    full = write_png("truncated.png", 300, 200, RGB, 8, gradient(RGB, 8))
    with open(os.path.join(HERE, "truncated.png"), "wb") as f:
        f.write(full[: len(full) // 2])
    with open(os.path.join(HERE, "notpng.png"), "wb") as f:
        f.write(b"this is text with a .png name\n")


if __name__ == "__main__":
    main()
