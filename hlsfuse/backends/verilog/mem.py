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
    """``$readmemh`` text of ``values`` (raw integers, row-major, any shape: a transposed view of a constant is read
    a piece at a time, never copied whole) then ``pad`` zeros, as ``width``-bit elements, in pieces of whole lines.
    The values are checked by this call (its errors are not left to the iteration).

    With ``lanes`` > 1 every ``lanes`` consecutive values form one word of ``lanes * width`` bits, the first in the
    low bits (a ROM that delivers a whole weight vector per read). Vectorized: a ROM of ResNet-18's size (2.4 M
    elements) takes a fraction of a second.
    """
    if not 1 <= width <= 64:
        raise HlsfuseError(f"ROM element width must be 1..64 bits, not {width}")
    values = np.asarray(values, dtype=np.int64)
    if values.ndim == 0:
        values = values.reshape(1)
    if lanes < 1 or pad < 0 or (values.size + pad) % lanes:
        raise HlsfuseError(f"ROM of {values.size + pad} elements cannot be packed {lanes} per word")
    low = -(1 << (width - 1))
    bad = values < low
    if width < 64:  # an int64 is at most 2^64 - 1 as width bits
        bad |= values > (1 << width) - 1
    if bad.any():
        first = int(np.flatnonzero(bad.reshape(-1))[0])
        raise HlsfuseError(f"ROM element {first} is {values.reshape(-1)[first]}, which does not fit {width} bits")
    return _chunks(values, width, lanes, pad)


def _chunks(values: np.ndarray, width: int, lanes: int, pad: int) -> Iterator[str]:
    """Lines of ``values`` then ``pad`` zeros: the leading axis a slice at a time (a whole number of lines), so
    only a slice is ever copied into row-major order."""
    total = values.size + pad
    row = values[0].size if values.ndim > 1 else 1  # elements a step of the leading axis
    step = max(1, _ELEMENTS // lanes) * lanes  # elements a piece: whole words, then whole rows
    rows = max(1, step // row)
    while (rows * row) % lanes:
        rows += 1
    done = 0
    for start in range(0, values.shape[0], rows):
        part = values[start:start + rows].reshape(-1)
        done += part.size
        if done == values.size and pad:
            part = np.concatenate([part, np.zeros(pad, dtype=np.int64)])
        elif part.size % lanes:
            raise HlsfuseError(f"ROM of {total} elements: a piece of {part.size} is not whole words of {lanes}")
        yield _text(part, width, lanes)
    if not values.size and pad:
        yield _text(np.zeros(pad, dtype=np.int64), width, lanes)


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
