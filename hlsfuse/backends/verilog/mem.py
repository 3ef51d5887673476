"""ROM contents as ``$readmemh`` text: the .mem files of weight ROMs and lookup tables.

hw/rtl's ``hlsf_rom`` (and ``hlsf_lut``, which reads its table through it) loads its INIT_FILE with
``$readmemh``: one word per line, in address order, as hexadecimal digits. An element is the raw
value of its fixed-point type as a width-bit two's-complement (or unsigned) bit pattern, so a
ROM holds exactly the raw int64 values the reference computes with (a constant's quantized values,
``lut.make_table(...).entries``). Every line has the digits of the whole word, so files are
byte-identical for identical contents.
"""

from __future__ import annotations

import numpy as np

from ...errors import HlsfuseError

__all__ = ["mem_lines"]


def mem_lines(values, width: int, lanes: int = 1) -> str:
    """``$readmemh`` text of ``values`` (raw integers, row-major) as ``width``-bit elements.

    With ``lanes`` > 1 every ``lanes`` consecutive values form one word of ``lanes * width`` bits,
    the first in the low bits (a ROM that delivers a whole weight vector per read).
    """
    if not 1 <= width <= 64:
        raise HlsfuseError(f"ROM element width must be 1..64 bits, not {width}")
    flat = [int(v) for v in np.asarray(values, dtype=np.int64).reshape(-1).tolist()]
    if lanes < 1 or len(flat) % lanes:
        raise HlsfuseError(f"ROM of {len(flat)} elements cannot be packed {lanes} per word")
    low, high = -(1 << (width - 1)), (1 << width) - 1
    for index, value in enumerate(flat):
        if not low <= value <= high:
            raise HlsfuseError(f"ROM element {index} is {value}, which does not fit {width} bits")
    mask = (1 << width) - 1
    digits = (width * lanes + 3) // 4
    lines = []
    for start in range(0, len(flat), lanes):
        word = 0
        for lane, value in enumerate(flat[start : start + lanes]):
            word |= (value & mask) << (lane * width)
        lines.append(f"{word:0{digits}x}\n")
    return "".join(lines)
