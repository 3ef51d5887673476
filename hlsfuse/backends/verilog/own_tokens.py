"""Tokens of own stages in Verilog (``stage_own``, ``stage_opaque``): an operand's tokens, their lanes, and each
lane assigned to the output type.

A token of L lanes is L x W bits, lane l in bits [l W, (l + 1) W). Every result is assigned once to the node's
output type with ``hlsf_assign``, as the reference does. An operand that is a graph constant is no channel but a
ROM (``lanes`` consecutive elements per word), read in row-major order by a counter in the iterations that would
read a channel.
"""

from __future__ import annotations

from ...lower import own_movers
from ...types import FixedType
from .expr import rom
from .module import ModuleBuilder
from .vlog import XW, assign_params, bits_for, sext64, ulit, zext

__all__ = [
    "source",
    "split",
    "join",
    "lane_tag",
    "assign",
    "moved",
    "moved_token",
    "larger",
    "first_max",
    "exact",
    "mask",
]


def source(b: ModuleBuilder, src: own_movers.Source, when: str, fire: str, tag: str, lanes: int = 1
            ) -> tuple[str, FixedType]:
    """(raw bits of the operand's token on offer, its element type); ``when``: the iterations that take one.
    A constant's ROM holds ``lanes`` consecutive elements per word."""
    dtype = b.dtype(src.tensor)
    if src.channel is not None:
        b.move(src.channel, when)
        return f"{src.channel}_tdata", dtype
    size = b.graph.types[src.tensor].size
    if lanes == 1:
        table = rom(b, src.tensor)
    else:
        data = b.graph.constant_map[src.tensor].data.reshape(-1)
        table = b.rom(b.rom_of(src.tensor), data, dtype.width, lanes)
    at, aw = b.counter(f"at_{tag}", size // lanes, f"{fire} && {when}")
    return b.wire(f"rom_{tag}", lanes * dtype.width, f"{table}[{zext(at, aw, b.index(table))}]"), dtype


def split(b: ModuleBuilder, token: str, width: int, lanes: int, tag: str) -> list[str]:
    """The lanes of ``token`` (a signal of ``lanes`` x ``width`` bits), lane l in bits [l W, (l + 1) W)."""
    if lanes == 1:
        return [token]
    return [b.wire(f"{tag}{lane}", width, f"{token}[{(lane + 1) * width - 1}:{lane * width}]") for lane in range(lanes)]


def join(b: ModuleBuilder, values: list[str], width: int, tag: str) -> str:
    """One token of ``values`` (``width`` bits each), the first in the low bits."""
    if len(values) == 1:
        return values[0]
    return b.wire(tag, len(values) * width, "{" + ", ".join(reversed(values)) + "}")


def lane_tag(tag: str, lane: int, lanes: int) -> str:
    return tag if lanes == 1 else f"{tag}{lane}"


def assign(b: ModuleBuilder, value: str, frac: int, out: FixedType, tag: str, in_w: int = XW,
            in_signed: bool = True) -> str:
    """``value`` (``in_w`` bits, ``frac`` fractional bits) assigned to ``out`` by one hlsf_assign."""
    name = b.net(f"y_{tag}", out.width)
    b.instance("hlsf_assign", assign_params(frac, out, in_w, in_signed), f"u_{tag}",
               (("in_data", value), ("in_sticky", "1'b0"), ("out_data", name)))
    return name


def moved(b: ModuleBuilder, raw: str, dtype: FixedType, out: FixedType, tag: str) -> str:
    """An element moved to the output type (the injective ops' ``finish``)."""
    return assign(b, raw, dtype.frac, out, tag, dtype.width, dtype.signed)


def moved_token(b: ModuleBuilder, token: str, dtype: FixedType, out: FixedType, lanes: int, tag: str) -> str:
    """A token of ``lanes`` elements moved to the output type, lane by lane."""
    ins = split(b, token, dtype.width, lanes, f"lane_{tag}")
    ys = [moved(b, raw, dtype, out, lane_tag(tag, lane, lanes)) for lane, raw in enumerate(ins)]
    return join(b, ys, out.width, f"token_{tag}")


def larger(b: ModuleBuilder, x: str, y: str, dtype: FixedType, tag: str) -> str:
    """The raw ``dtype`` value ``x`` is strictly greater than ``y``."""
    return b.wire(f"gt_{tag}", 1, f"$signed({sext64(x, dtype)}) > $signed({sext64(y, dtype)})")


def first_max(b: ModuleBuilder, values: list[str], dtype: FixedType, positions: bool = True
               ) -> tuple[str, str | None, int]:
    """(the first maximum of ``values``, its position or None when ``positions`` is false, the position's bits):
    a balanced tree in which the later of two values wins only when strictly greater, so the lowest position
    wins ties."""
    pw = bits_for(len(values))
    level = [(v, ulit(k, pw) if positions else None) for k, v in enumerate(values)]
    depth = 0
    while len(level) > 1:
        nxt = []
        for pos in range(0, len(level) - 1, 2):
            (a, ia), (c, ic) = level[pos], level[pos + 1]
            tag = f"{depth}_{pos // 2}"
            gt = larger(b, c, a, dtype, tag)
            at = b.wire(f"lane{tag}", pw, f"{gt} ? {ic} : {ia}") if positions else None
            nxt.append((b.wire(f"max{tag}", dtype.width, f"{gt} ? {c} : {a}"), at))
        if len(level) % 2:
            nxt.append(level[-1])
        level, depth = nxt, depth + 1
    return level[0][0], level[0][1], pw


def exact(b: ModuleBuilder, raw: str, dtype: FixedType, tag: str) -> str:
    """The raw bits of a ``dtype`` value as a signed 64-bit wire (to compare or combine exactly)."""
    if "[" in raw:  # a memory word: name it before selecting its sign bit
        raw = b.wire(f"w_{tag}", dtype.width, raw)
    return b.wire(f"x_{tag}", XW, sext64(raw, dtype), signed=True)


def mask(b: ModuleBuilder, name: str, bits, index: str) -> str:
    """``bits[index]`` of a constant bit vector."""
    n = len(bits)
    pattern = "".join("1" if v else "0" for v in reversed(list(bits)))
    vector = b.wire(name, n, f"{n}'b{pattern}")
    return f"{vector}[{index}]"
