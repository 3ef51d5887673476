"""ROM contents as ``$readmemh`` text: the .mem files of weight ROMs and lookup tables.

hw/rtl's ``hlsf_rom`` (and ``hlsf_lut``, which reads its table through it) loads its INIT_FILE with
``$readmemh``: one word per line, in address order, as hexadecimal digits. An element is the raw
value of its fixed-point type as a width-bit two's-complement (or unsigned) bit pattern, so a
ROM holds exactly the raw int64 values the reference computes with (a constant's quantized values,
``lut.make_table(...).entries``). Every line has the digits of the whole word, so files are
byte-identical for identical contents.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ...errors import HlsfuseError

__all__ = ["mem_lines", "mem_chunks"]

_ELEMENTS = 1 << 16
"""Elements turned into text at a time: a ROM of ResNet-18's size (2.4 M elements) is written in pieces of a few
megabytes of work arrays, never whole."""


def mem_lines(values, width: int, lanes: int = 1) -> str:
    """``$readmemh`` text of ``values`` (raw integers, row-major) as ``width``-bit elements: ``mem_chunks`` joined."""
    return "".join(mem_chunks(values, width, lanes))


def mem_chunks(values, width: int, lanes: int = 1, pad: int = 0) -> Iterator[str]:
    """``$readmemh`` text of ``values`` (raw integers, row-major) then ``pad`` zeros, as ``width``-bit elements, in
    pieces of whole lines. The values are checked by this call (its errors are not left to the iteration).

    With ``lanes`` > 1 every ``lanes`` consecutive values form one word of ``lanes * width`` bits, the first in the
    low bits (a ROM that delivers a whole weight vector per read). Vectorized: a ROM of ResNet-18's size (2.4 M
    elements) takes a fraction of a second.
    """
    if not 1 <= width <= 64:
        raise HlsfuseError(f"ROM element width must be 1..64 bits, not {width}")
    flat = np.asarray(values, dtype=np.int64).reshape(-1)
    if lanes < 1 or pad < 0 or (flat.size + pad) % lanes:
        raise HlsfuseError(f"ROM of {flat.size + pad} elements cannot be packed {lanes} per word")
    low, high = -(1 << (width - 1)), (1 << width) - 1
    bad = np.flatnonzero((flat < low) | (flat.astype(np.float64) > high))  # high may not fit an int64
    if bad.size:
        raise HlsfuseError(f"ROM element {bad[0]} is {flat[bad[0]]}, which does not fit {width} bits")
    return _chunks(flat, width, lanes, pad)


def _chunks(flat: np.ndarray, width: int, lanes: int, pad: int) -> Iterator[str]:
    step = max(1, _ELEMENTS // lanes) * lanes  # whole words
    for start in range(0, flat.size + pad, step):
        part = flat[start:start + step]
        missing = min(step, flat.size + pad - start) - part.size
        if missing:
            part = np.concatenate([part, np.zeros(missing, dtype=np.int64)])
        yield _text(part, width, lanes)


def _text(flat: np.ndarray, width: int, lanes: int) -> str:
    bits = width * lanes
    digits = (bits + 3) // 4
    unsigned = flat.view(np.uint64) & np.uint64((1 << width) - 1 if width < 64 else (1 << 64) - 1)
    if bits <= 64:  # a word is one uint64: its digits by shifts
        words = np.zeros(flat.size // lanes, dtype=np.uint64)
        for lane in range(lanes):
            words |= unsigned[lane::lanes] << np.uint64(lane * width)
        shifts = np.arange(digits - 1, -1, -1, dtype=np.uint64) * np.uint64(4)
        nibbles = ((words[:, None] >> shifts[None, :]) & np.uint64(15)).astype(np.uint8)
    elif width % 4 == 0:  # a wide word of whole-digit elements: each element's digits, the last lane first
        shifts = np.arange(width // 4 - 1, -1, -1, dtype=np.uint64) * np.uint64(4)
        nibbles = ((unsigned[:, None] >> shifts[None, :]) & np.uint64(15)).astype(np.uint8)
        nibbles = nibbles.reshape(-1, lanes, width // 4)[:, ::-1, :].reshape(-1, digits)
    else:  # a wide word: its bits, low first, grouped into digits
        low_first = ((unsigned[:, None] >> np.arange(width, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(np.uint8)
        low_first = low_first.reshape(-1, bits)
        low_first = np.pad(low_first, ((0, 0), (0, digits * 4 - bits)))
        nibbles = low_first.reshape(-1, digits, 4) @ np.array([1, 2, 4, 8], dtype=np.uint8)
        nibbles = nibbles[:, ::-1]
    text = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles]
    lines = np.concatenate([text, np.full((text.shape[0], 1), ord("\n"), dtype=np.uint8)], axis=1)
    return lines.tobytes().decode("ascii")
