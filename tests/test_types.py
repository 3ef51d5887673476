"""hlsfuse.types against an independent model of DESIGN.md section 3.

The model below does not share code or tricks with hlsfuse/types.py: it takes the exact rational
value (``fractions.Fraction``), floors it, reads qb and r off the dropped remainder, adds the
increment of the quantization mode, then applies the overflow mode to a Python int. ``assign`` is
compared with it exhaustively on small widths; ``from_float`` on random, halfway and huge doubles;
``assign_quotient`` on exact quotients x * 2**-frac / n, exhaustively for small x and n, and at random.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hlsfuse.errors import HlsfuseError
from hlsfuse.types import (
    FLOAT32,
    OVERFLOW_MODES,
    QUANT_MODES,
    FixedType,
    Fmt,
    assign,
    assign_quotient,
    from_float,
    parse_dtype,
    to_float,
)

# --------------------------------------------------------------------------
# The independent model
# --------------------------------------------------------------------------

HALF = Fraction(1, 2)

# DESIGN.md section 3: the increment of each quantization mode (numpy bool arrays; lsb = T & 1).
INCREMENT = {
    "TRN": lambda lsb, qb, r, neg: np.zeros_like(qb),
    "TRN_ZERO": lambda lsb, qb, r, neg: neg & (qb | r),
    "RND": lambda lsb, qb, r, neg: qb,
    "RND_ZERO": lambda lsb, qb, r, neg: qb & (neg | r),
    "RND_MIN_INF": lambda lsb, qb, r, neg: qb & r,
    "RND_INF": lambda lsb, qb, r, neg: qb & (~neg | r),
    "RND_CONV": lambda lsb, qb, r, neg: qb & (lsb | r),
}


def split(value: Fraction, frac: int) -> tuple[int, bool, bool]:
    """T = floor(value * 2**frac); qb and r of the dropped part.

    The dropped part ``rest`` is in [0, 1): qb (the first dropped bit) is rest >= 1/2 and r (any
    later dropped bit) is rest not in {0, 1/2}. When nothing is dropped (d <= 0) rest is 0, so
    every mode adds 0 and Q = X << -d, as the table says.
    """
    scaled = value * Fraction(2) ** frac
    t = math.floor(scaled)
    rest = scaled - t
    return t, rest >= HALF, rest != 0 and rest != HALF


def model_parts(values: list[Fraction], frac: int) -> tuple[np.ndarray, ...]:
    """T (object array of ints), lsb = T & 1, qb, r and neg for exact ``values`` on ``frac`` fractional bits."""
    parts = [split(v, frac) for v in values]
    t = np.array([p[0] for p in parts], dtype=object)  # Python ints: no 64-bit limit
    lsb = np.array([p[0] % 2 == 1 for p in parts], dtype=bool)
    qb = np.array([p[1] for p in parts], dtype=bool)
    r = np.array([p[2] for p in parts], dtype=bool)
    neg = np.array([v < 0 for v in values], dtype=bool)
    return t, lsb, qb, r, neg


def model_increment(parts: tuple[np.ndarray, ...], quant: str) -> np.ndarray:
    """Q = T + inc (object array of ints)."""
    t, lsb, qb, r, neg = parts
    return t + INCREMENT[quant](lsb, qb, r, neg).astype(object)


def model_quantize(values: list[Fraction], frac: int, quant: str) -> np.ndarray:
    return model_increment(model_parts(values, frac), quant)


def model_overflow(q: np.ndarray, width: int, signed: bool, overflow: str) -> np.ndarray:
    """The overflow mode on integers (an object array of Python ints, or small int64); returns int64 raw values."""
    lo, hi = (-(2 ** (width - 1)), 2 ** (width - 1) - 1) if signed else (0, 2**width - 1)
    if overflow == "WRAP":  # the low W bits, sign-extended: the one value congruent mod 2**W in [lo, hi]
        out = (q - lo) % 2**width + lo
    elif overflow == "SAT":
        out = np.minimum(np.maximum(q, lo), hi)
    elif overflow == "SAT_ZERO":
        out = np.where((q >= lo) & (q <= hi), q, 0)
    else:  # SAT_SYM: symmetric range for signed types, plain SAT for unsigned ones
        out = np.minimum(np.maximum(q, -hi if signed else lo), hi)
    if out.dtype != object:
        return out.astype(np.int64)
    return np.array([int(v) for v in out.ravel()], dtype=np.int64).reshape(out.shape)


def model_from_values(values: list[Fraction], t: FixedType) -> np.ndarray:
    return model_overflow(model_quantize(values, t.frac, t.quant), t.width, t.signed, t.overflow)


def model_assign(raws: list[int], frac: int, t: FixedType) -> np.ndarray:
    return model_from_values([Fraction(x) / Fraction(2) ** frac for x in raws], t)


def model_from_float(values, t: FixedType) -> np.ndarray:
    return model_from_values([Fraction(float(v)) for v in values], t)


def fixed_types(widths, int_bits, signs=(True, False)):
    for width in widths:
        for signed in signs:
            for i in sorted(set(int_bits(width))):
                yield width, i, signed


# --------------------------------------------------------------------------
# assign: exhaustive on small widths
# --------------------------------------------------------------------------

# Every raw value of every source format up to 10 bits (signed needs -512..511, unsigned 0..1023).
RAWS = np.arange(-512, 1024, dtype=np.int64)
# d = F_source - F_target: left shifts (past 64 too), none, and right shifts up to past the width.
OFFSETS = (-70, -64, -9, -1, 0, 1, 2, 3, 5, 10, 11, 12, 64, 70)


@cache
def offset_parts(raws: tuple[int, ...], offsets: tuple[int, ...]) -> tuple[tuple[np.ndarray, ...], ...]:
    """Model parts of ``raws * 2**-d`` on 0 fractional bits, one per offset d (the slow, exact step)."""
    return tuple(model_parts([Fraction(x) / Fraction(2) ** d for x in raws], 0) for d in offsets)


@cache
def small_quantized(quant: str) -> tuple[np.ndarray, np.ndarray]:
    """Model Q before overflow for RAWS x OFFSETS: (int64 rows for small shifts, object rows for d <= -64)."""
    rows = [model_increment(p, quant) for p in offset_parts(tuple(RAWS.tolist()), OFFSETS)]
    small = [i for i, d in enumerate(OFFSETS) if d > -64]
    big = [i for i, d in enumerate(OFFSETS) if d <= -64]
    return np.array([rows[i] for i in small], dtype=np.int64), np.array([rows[i] for i in big], dtype=object)


@cache
def small_expected(width: int, signed: bool, quant: str, overflow: str) -> np.ndarray:
    """Model results for RAWS x OFFSETS (rows in OFFSETS order); they do not depend on I."""
    small, big = small_quantized(quant)
    rows = {}
    small_d = [d for d in OFFSETS if d > -64]
    big_d = [d for d in OFFSETS if d <= -64]
    for d, row in zip(small_d, model_overflow(small, width, signed, overflow)):  # |Q| < 2**21: int64 is exact
        rows[d] = row
    for d, row in zip(big_d, model_overflow(big, width, signed, overflow)):
        rows[d] = row
    return np.stack([rows[d] for d in OFFSETS])


def small_int_bits(width):
    return (-3, 0, width // 2, width - 1, width, width + 4)


@pytest.mark.parametrize("width", range(1, 9))
def test_assign_exhaustive_small_widths(width):
    """Every target W<=8 (I < 0 .. I > W), every mode, every raw of <=10-bit sources, 14 offsets."""
    offsets = np.array(OFFSETS, dtype=np.int64)[:, None]
    checked = 0
    for block, (_, int_bits, signed) in enumerate(fixed_types([width], small_int_bits)):
        for mode, (quant, overflow) in enumerate((q, o) for q in QUANT_MODES for o in OVERFLOW_MODES):
            t = FixedType(width, int_bits, signed, quant, overflow)
            expected = small_expected(width, signed, quant, overflow)
            # every offset at once (a per-row frac), then one offset with a plain int frac, the usual
            # call; rotating the offset per type block gives each mode most offsets on that path too
            got = assign(RAWS[None, :], offsets + t.frac, t)
            np.testing.assert_array_equal(got, expected, err_msg=str(t))
            row = (block + mode) % len(OFFSETS)
            got_row = assign(RAWS, OFFSETS[row] + t.frac, t)
            np.testing.assert_array_equal(got_row, expected[row], err_msg=f"{t}, d={OFFSETS[row]}")
            checked += 1
    assert checked == len(set(small_int_bits(width))) * 2 * 28


def test_model_agrees_with_the_bit_definitions():
    """qb and r from the rational remainder are bit d-1 and bits 0..d-2 of X (Python ints)."""
    for x in range(-300, 300):
        for d in (1, 2, 3, 7, 12):
            t, qb, r = split(Fraction(x) / Fraction(2) ** d, 0)
            assert t == x >> d
            assert qb == bool((x >> (d - 1)) & 1)
            assert r == (x & ((1 << (d - 1)) - 1) != 0)


# --------------------------------------------------------------------------
# assign: 64-bit edges
# --------------------------------------------------------------------------

EDGE_RAWS = [
    -(2**63), -(2**63) + 1, -(2**62) - 1, -(2**62), -(2**61), -3, -2, -1, 0, 1, 2, 3,
    2**61, 2**62 - 1, 2**62, 2**62 + 1, 2**63 - 2, 2**63 - 1,
]
EDGE_OFFSETS = (-70, -64, -63, -62, -2, -1, 0, 1, 2, 61, 62, 63, 64, 65, 70)


@pytest.mark.parametrize("width,signed", [(64, True), (63, True), (63, False), (62, True), (62, False)])
def test_assign_wide_types_at_int64_limits(width, signed):
    raws = np.array(EDGE_RAWS, dtype=np.int64)
    parts = dict(zip(EDGE_OFFSETS, offset_parts(tuple(EDGE_RAWS), EDGE_OFFSETS)))
    for quant in QUANT_MODES:
        for overflow in OVERFLOW_MODES:
            expected = {d: model_overflow(model_increment(p, quant), width, signed, overflow) for d, p in parts.items()}
            for int_bits in (-3, 0, 1, width, width + 5):
                t = FixedType(width, int_bits, signed, quant, overflow)
                for d in EDGE_OFFSETS:
                    np.testing.assert_array_equal(assign(raws, d + t.frac, t), expected[d], err_msg=f"{t}, d={d}")
    # spot-check the shortcut above (parts on 0 fractional bits) against the plain model
    t = FixedType(width, 3, signed, "RND_CONV", "SAT_SYM")
    shortcut = model_overflow(model_increment(parts[2], "RND_CONV"), width, signed, "SAT_SYM")
    np.testing.assert_array_equal(model_assign(EDGE_RAWS, 2 + t.frac, t), shortcut)


@pytest.mark.parametrize(
    "dtype,raws,frac,expected",
    [
        # fixed<4,4>: -8..7
        ("fixed<4,4>", [-9, -8, -7, 7, 8], 0, [7, -8, -7, 7, -8]),
        ("fixed<4,4,TRN,SAT>", [-9, -8, -7, 7, 8], 0, [-8, -8, -7, 7, 7]),
        ("fixed<4,4,TRN,SAT_ZERO>", [-9, -8, -7, 7, 8], 0, [0, -8, -7, 7, 0]),
        ("fixed<4,4,TRN,SAT_SYM>", [-9, -8, -7, 7, 8], 0, [-7, -7, -7, 7, 7]),
        # ufixed<4,4>: 0..15; SAT_SYM is SAT for unsigned types
        ("ufixed<4,4>", [-1, 0, 15, 16], 0, [15, 0, 15, 0]),
        ("ufixed<4,4,TRN,SAT>", [-1, 0, 15, 16], 0, [0, 0, 15, 15]),
        ("ufixed<4,4,TRN,SAT_ZERO>", [-1, 0, 15, 16], 0, [0, 0, 15, 0]),
        ("ufixed<4,4,TRN,SAT_SYM>", [-1, 0, 15, 16], 0, [0, 0, 15, 15]),
        # rounding up out of range: 1.875 -> 2.0 does not fit fixed<4,2> (max 1.75)
        ("fixed<4,2,RND>", [15], 3, [-8]),
        ("fixed<4,2,RND,SAT>", [15], 3, [7]),
        ("fixed<4,2,RND,SAT_ZERO>", [15], 3, [0]),
        ("fixed<4,2,RND,SAT_SYM>", [15], 3, [7]),
        # rounding back into range: -2.125 -> -2.0 (RND) fits; truncating to -2.25 does not
        ("fixed<4,2,RND,SAT_ZERO>", [-17], 3, [-8]),
        ("fixed<4,2,RND,SAT_SYM>", [-17], 3, [-7]),
        ("fixed<4,2,TRN>", [-17], 3, [7]),
        ("fixed<4,2,TRN,SAT>", [-17], 3, [-8]),
        ("fixed<4,2,TRN,SAT_ZERO>", [-17], 3, [0]),
        # fixed<1,1>: -1..0, so SAT_SYM's range is {0}
        ("fixed<1,1>", [-1, 0, 1], 0, [-1, 0, -1]),
        ("fixed<1,1,TRN,SAT>", [-1, 0, 1], 0, [-1, 0, 0]),
        ("fixed<1,1,TRN,SAT_SYM>", [-1, 0, 1], 0, [0, 0, 0]),
        # 64-bit signed: the minimum is in range except for SAT_SYM
        ("fixed<64,64>", [-(2**63), 2**63 - 1], 0, [-(2**63), 2**63 - 1]),
        ("fixed<64,64,TRN,SAT_ZERO>", [-(2**63)], 0, [-(2**63)]),
        ("fixed<64,64,TRN,SAT_SYM>", [-(2**63)], 0, [-(2**63) + 1]),
        # (2**63 - 1) * 2 = 2**64 - 2: wraps to -2, saturates to the maximum
        ("fixed<64,64>", [2**63 - 1], -1, [-2]),
        ("fixed<64,64,TRN,SAT>", [2**63 - 1, -(2**63)], -1, [2**63 - 1, -(2**63)]),
        ("fixed<64,64,TRN,SAT_ZERO>", [2**63 - 1], -1, [0]),
        ("fixed<64,64,TRN,SAT_SYM>", [2**63 - 1, -(2**63)], -1, [2**63 - 1, -(2**63) + 1]),
        # 63-bit unsigned: 0 .. 2**63-1, the widest unsigned type
        ("ufixed<63,63>", [2**63 - 1, -1, 2**62], -1, [2**63 - 2, 2**63 - 2, 0]),
        ("ufixed<63,63,TRN,SAT>", [2**63 - 1, -1, 2**62], 0, [2**63 - 1, 0, 2**62]),
        ("ufixed<63,63,TRN,SAT>", [2**62, -1], -1, [2**63 - 1, 0]),
        ("ufixed<63,63,TRN,SAT_ZERO>", [2**62], -1, [0]),
        # 63-bit signed WRAP sign-extends from bit 62
        ("fixed<63,63>", [2**62, 2**62 - 1, -(2**62) - 1], 0, [-(2**62), 2**62 - 1, 2**62 - 1]),
        # the int64 minimum shifted right past the word: floor is -1, every dropped bit counts
        ("fixed<8,8,RND_ZERO>", [-(2**63)], 64, [0]),
        ("fixed<8,8,RND_MIN_INF>", [-(2**63)], 64, [-1]),
        ("fixed<8,8,TRN_ZERO>", [-(2**63)], 65, [0]),
    ],
)
def test_assign_range_boundaries(dtype, raws, frac, expected):
    got = assign(np.array(raws, dtype=np.int64), frac, parse_dtype(dtype))
    assert got.dtype == np.int64
    assert got.tolist() == expected


def test_assign_keeps_shape_and_broadcasts_frac():
    t = parse_dtype("fixed<8,4,RND,SAT>")
    raws = np.arange(-40, 40, dtype=np.int64).reshape(2, 4, 10)
    assert assign(raws, 6, t).shape == (2, 4, 10)
    assert assign(np.int64(24), 6, t).shape == ()
    fracs = np.array([2, 4, 6, 8], dtype=np.int64)[:, None]
    per_row = np.stack([assign(raws[:, j], int(fracs[j, 0]), t) for j in range(4)], 1)
    np.testing.assert_array_equal(assign(raws, fracs, t), per_row)


# --------------------------------------------------------------------------
# from_float
# --------------------------------------------------------------------------


@st.composite
def any_fixed_type(draw, max_width=64):
    signed = draw(st.booleans())
    width = draw(st.integers(1, max_width if signed else min(max_width, 63)))
    int_bits = draw(st.integers(-12, width + 12))
    return FixedType(width, int_bits, signed, draw(st.sampled_from(QUANT_MODES)), draw(st.sampled_from(OVERFLOW_MODES)))


finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(t=any_fixed_type(), values=st.lists(finite, min_size=1, max_size=20))
def test_from_float_matches_model_on_random_doubles(t, values):
    np.testing.assert_array_equal(from_float(values, t), model_from_float(values, t), err_msg=str(t))


@settings(max_examples=200, deadline=None)
@given(t=any_fixed_type(), values=st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=20))
def test_from_float_matches_model_near_the_range(t, values):
    scaled = [math.ldexp(v, -t.frac + t.width - 10) for v in values]  # magnitudes around the type's range
    np.testing.assert_array_equal(from_float(scaled, t), model_from_float(scaled, t), err_msg=str(t))


@settings(max_examples=200, deadline=None)
@given(t=any_fixed_type(max_width=50), data=st.data())
def test_from_float_exact_halfway_values(t, data):
    """(k + 1/2) LSB for k around the whole range: the ties that separate the rounding modes."""
    ks = data.draw(st.lists(st.integers(t.raw_min - 3, t.raw_max + 3), min_size=1, max_size=20))
    values = [math.ldexp(2 * k + 1, -t.frac - 1) for k in ks]
    assert all(Fraction(v) == (k + HALF) * Fraction(2) ** -t.frac for v, k in zip(values, ks))
    np.testing.assert_array_equal(from_float(values, t), model_from_float(values, t), err_msg=str(t))


HUGE = [1e308, -1e308, 2.0**64, -(2.0**64), 2.0**63, -(2.0**63), 2.0**62 + 1024, -(2.0**62) - 2048, 1e30, -1e30]
TINY = [5e-324, -5e-324, 2.0**-1022, -(2.0**-1060), 1e-300]


@pytest.mark.parametrize("overflow", OVERFLOW_MODES)
@pytest.mark.parametrize("quant", QUANT_MODES)
@pytest.mark.parametrize("spec", ["fixed<64,64>", "ufixed<63,63>", "fixed<63,63>", "fixed<64,0>", "fixed<8,-120>",
                                  "fixed<8,120>", "ufixed<8,3>", "fixed<16,6>", "fixed<32,40>"])
def test_from_float_huge_and_tiny_values(spec, quant, overflow):
    base = parse_dtype(spec)
    t = FixedType(base.width, base.int_bits, base.signed, quant, overflow)
    values = HUGE + TINY
    np.testing.assert_array_equal(from_float(values, t), model_from_float(values, t), err_msg=str(t))


@pytest.mark.parametrize("overflow", OVERFLOW_MODES)
@settings(max_examples=50, deadline=None)
@given(base=any_fixed_type(), magnitude=st.integers(40, 1023),
       mantissas=st.lists(st.floats(-2, 2, exclude_min=True, exclude_max=True), max_size=10))  # 2 x 2**1023 overflows
@example(base=parse_dtype("fixed<64,64>"), magnitude=70, mantissas=[1.0, -1.0])
def test_from_float_large_values_every_overflow_mode(overflow, base, magnitude, mantissas):
    t = FixedType(base.width, base.int_bits, base.signed, base.quant, overflow)
    values = [math.ldexp(m, magnitude) for m in mantissas]
    np.testing.assert_array_equal(from_float(values, t), model_from_float(values, t), err_msg=str(t))


def test_from_float_known_values():
    assert from_float([0.5, -0.5, 1.5, 2.5, -2.5], parse_dtype("fixed<8,8,RND_CONV>")).tolist() == [0, 0, 2, 2, -2]
    assert from_float([0.5, -0.5, -1.5], parse_dtype("fixed<8,8,RND>")).tolist() == [1, 0, -1]
    assert from_float([0.5, -0.5, -1.5], parse_dtype("fixed<8,8,RND_ZERO>")).tolist() == [0, 0, -1]
    assert from_float([0.5, -0.5, -1.5], parse_dtype("fixed<8,8,RND_INF>")).tolist() == [1, -1, -2]
    assert from_float([0.5, -0.5, -1.5], parse_dtype("fixed<8,8,RND_MIN_INF>")).tolist() == [0, -1, -2]
    assert from_float([0.7, -0.7], parse_dtype("fixed<8,8>")).tolist() == [0, -1]
    assert from_float([0.7, -0.7], parse_dtype("fixed<8,8,TRN_ZERO>")).tolist() == [0, 0]
    assert from_float([1e30, -1e30], parse_dtype("fixed<64,64,TRN,SAT>")).tolist() == [2**63 - 1, -(2**63)]
    assert from_float([-(2.0**62)], parse_dtype("fixed<64,64>")).tolist() == [-(2**62)]
    assert from_float([-5e-324], parse_dtype("fixed<8,9>")).tolist() == [-1]  # floor of a tiny negative
    assert from_float(0.25, parse_dtype("ufixed<4,2>")).shape == ()


def test_from_float_rejects_nan_and_infinity():
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(HlsfuseError) as err:
            from_float([1.0, bad], parse_dtype("fixed<8,4>"))
        assert str(err.value) == "cannot convert NaN or infinity to fixed<8,4>"


def test_to_float_inverts_exact_assignments():
    t = parse_dtype("fixed<12,3>")
    raws = np.arange(t.raw_min, t.raw_max + 1, dtype=np.int64)
    values = to_float(raws, t)
    assert values[0] == -4.0 and values[-1] == 4.0 - 2.0**-9
    np.testing.assert_array_equal(from_float(values, t), raws)


# --------------------------------------------------------------------------
# parse_dtype and str
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,canonical,fields",
    [
        ("fixed<16,6>", "fixed<16,6>", (16, 6, True, "TRN", "WRAP")),
        ("fixed<16,6,RND>", "fixed<16,6,RND>", (16, 6, True, "RND", "WRAP")),
        ("fixed<16,6,RND,SAT>", "fixed<16,6,RND,SAT>", (16, 6, True, "RND", "SAT")),
        ("fixed<16,6,TRN,SAT>", "fixed<16,6,TRN,SAT>", (16, 6, True, "TRN", "SAT")),
        ("fixed<16,6,TRN,WRAP>", "fixed<16,6>", (16, 6, True, "TRN", "WRAP")),
        ("fixed<16,6,RND,WRAP>", "fixed<16,6,RND>", (16, 6, True, "RND", "WRAP")),
        (" fixed< 16 , 6 , RND > ", "fixed<16,6,RND>", (16, 6, True, "RND", "WRAP")),
        ("ufixed<8,0,RND_CONV,SAT_SYM>", "ufixed<8,0,RND_CONV,SAT_SYM>", (8, 0, False, "RND_CONV", "SAT_SYM")),
        ("fixed<8,-3>", "fixed<8,-3>", (8, -3, True, "TRN", "WRAP")),
        ("ufixed<4,10,TRN_ZERO,SAT_ZERO>", "ufixed<4,10,TRN_ZERO,SAT_ZERO>", (4, 10, False, "TRN_ZERO", "SAT_ZERO")),
        ("int8", "int8", (8, 8, True, "TRN", "WRAP")),
        ("int16", "int16", (16, 16, True, "TRN", "WRAP")),
        ("int32", "int32", (32, 32, True, "TRN", "WRAP")),
        ("uint8", "uint8", (8, 8, False, "TRN", "WRAP")),
        ("uint16", "uint16", (16, 16, False, "TRN", "WRAP")),
        ("uint32", "uint32", (32, 32, False, "TRN", "WRAP")),
        ("fixed<8,8>", "int8", (8, 8, True, "TRN", "WRAP")),
        ("ufixed<32,32>", "uint32", (32, 32, False, "TRN", "WRAP")),
        ("fixed<8,8,RND>", "fixed<8,8,RND>", (8, 8, True, "RND", "WRAP")),
        ("fixed<64,64>", "fixed<64,64>", (64, 64, True, "TRN", "WRAP")),
        ("ufixed<63,63,TRN,SAT>", "ufixed<63,63,TRN,SAT>", (63, 63, False, "TRN", "SAT")),
    ],
)
def test_parse_dtype_spellings(text, canonical, fields):
    t = parse_dtype(text)
    assert (t.width, t.int_bits, t.signed, t.quant, t.overflow) == fields
    assert str(t) == canonical
    assert parse_dtype(canonical) == t


def test_float32_spelling():
    assert parse_dtype("float32") is FLOAT32
    assert str(FLOAT32) == "float32" and FLOAT32.is_float and FLOAT32.bits == 32


def test_str_round_trips_for_every_type():
    count = 0
    for width, int_bits, signed in fixed_types(range(1, 65), lambda w: (-5, 0, w - 1, w, w + 7)):
        if not signed and width == 64:
            continue
        for quant in QUANT_MODES:
            for overflow in OVERFLOW_MODES:
                t = FixedType(width, int_bits, signed, quant, overflow)
                assert parse_dtype(str(t)) == t
                count += 1
    assert count == 17724  # (4 + 63 * 5) signed and (4 + 62 * 5) unsigned (W, I) pairs, 28 modes each


MODE_HELP = "expected one of TRN, TRN_ZERO, RND, RND_ZERO, RND_MIN_INF, RND_INF, RND_CONV"
DTYPE_HELP = "expected float32, int8/16/32, uint8/16/32, fixed<W,I[,Q[,O]]> or ufixed<W,I[,Q[,O]]>"


@pytest.mark.parametrize(
    "text,message",
    [
        ("fixed<16,6,FOO>", f"dtype fixed<16,6,FOO>: unknown quantization mode 'FOO', {MODE_HELP}"),
        ("fixed<16,6,SAT>", f"dtype fixed<16,6,SAT>: unknown quantization mode 'SAT', {MODE_HELP}"),
        ("fixed<16,6,rnd>", f"dtype fixed<16,6,rnd>: unknown quantization mode 'rnd', {MODE_HELP}"),
        (
            "fixed<16,6,RND,CLAMP>",
            "dtype fixed<16,6,RND,CLAMP>: unknown overflow mode 'CLAMP', expected one of WRAP, SAT, SAT_ZERO, SAT_SYM",
        ),
        ("fixed<0,0>", "dtype fixed<0,0>: width must be 1..64, not 0"),
        ("fixed<65,6>", "dtype fixed<65,6>: width must be 1..64, not 65"),
        ("ufixed<64,6>", "dtype ufixed<64,6>: width must be 1..63, not 64"),
        ("fixed<-4,2>", "dtype fixed<-4,2>: width must be 1..64, not -4"),
        ("fixed<8,200>", "dtype fixed<8,200>: integer bits must be within +-128"),
        ("fixed16", f"dtype 'fixed16': {DTYPE_HELP}"),
        ("fixed<16>", f"dtype 'fixed<16>': {DTYPE_HELP}"),
        ("fixed<16,6,RND,SAT,X>", f"dtype 'fixed<16,6,RND,SAT,X>': {DTYPE_HELP}"),
        ("fixed<16,6,,SAT>", f"dtype 'fixed<16,6,,SAT>': {DTYPE_HELP}"),
        ("fixed<a,b>", f"dtype 'fixed<a,b>': {DTYPE_HELP}"),
        ("int64", f"dtype 'int64': {DTYPE_HELP}"),
        ("float", f"dtype 'float': {DTYPE_HELP}"),
        ("", f"dtype '': {DTYPE_HELP}"),
        (16, f"dtype 16: {DTYPE_HELP}"),
    ],
)
def test_parse_dtype_errors(text, message):
    with pytest.raises(HlsfuseError) as err:
        parse_dtype(text)
    assert str(err.value) == message


def test_fixed_type_properties():
    t = parse_dtype("fixed<16,6>")
    assert (t.frac, t.raw_min, t.raw_max, t.lsb, t.is_int) == (10, -(2**15), 2**15 - 1, 2.0**-10, False)
    u = parse_dtype("ufixed<8,10>")
    assert (u.frac, u.raw_min, u.raw_max, u.lsb) == (-2, 0, 255, 4.0)
    assert parse_dtype("uint8").is_int


# --------------------------------------------------------------------------
# Fmt: formats of exact intermediates
# --------------------------------------------------------------------------

SMALL_FMTS = [Fmt(w, i, s) for w in range(1, 5) for i in (-2, 0, 1, 3, 6) for s in (True, False)]


def fmt_values(f: Fmt) -> np.ndarray:
    """Every raw value of ``f``."""
    lo, hi = (-(1 << (f.width - 1)), (1 << (f.width - 1)) - 1) if f.signed else (0, (1 << f.width) - 1)
    return np.arange(lo, hi + 1, dtype=np.int64)


def holds(f: Fmt, raws: np.ndarray, frac: int) -> bool:
    """Whether every exact value ``raws * 2**-frac`` is a value of ``f``."""
    if f.frac >= frac:
        scaled = raws << (f.frac - frac)
    else:
        step = 1 << (frac - f.frac)
        if np.any(raws % step):
            return False
        scaled = raws // step
    lo, hi = (-(1 << (f.width - 1)), (1 << (f.width - 1)) - 1) if f.signed else (0, (1 << f.width) - 1)
    return bool(np.all((scaled >= lo) & (scaled <= hi)))


def design_int_bits(a: Fmt, b: Fmt) -> int:
    """DESIGN.md / ap_fixed: an unsigned operand next to a signed one needs one more integer bit."""
    return max(a.int_bits + (b.signed and not a.signed), b.int_bits + (a.signed and not b.signed))


def test_fmt_binary_results_hold_every_exact_value():
    pairs = 0
    for a in SMALL_FMTS:
        x = fmt_values(a)[:, None]
        for b in SMALL_FMTS:
            y = fmt_values(b)[None, :]
            frac = max(a.frac, b.frac)
            xa, yb = x << (frac - a.frac), y << (frac - b.frac)
            i, signed = design_int_bits(a, b), a.signed or b.signed

            union = a.union(b)
            assert union == Fmt(i + frac, i, signed)
            assert holds(union, np.concatenate([xa.ravel(), yb.ravel()]), frac)
            assert holds(union, np.maximum(xa, yb), frac) and holds(union, np.minimum(xa, yb), frac)

            assert a.add(b) == Fmt(i + 1 + frac, i + 1, signed)
            assert holds(a.add(b), xa + yb, frac), (a, b)

            assert a.sub(b) == Fmt(i + 1 + frac, i + 1, True)
            assert holds(a.sub(b), xa - yb, frac), (a, b)
            assert holds(a.sub(b), yb - xa, frac), (a, b)

            assert a.mul(b) == Fmt(a.width + b.width, a.int_bits + b.int_bits, signed)
            assert holds(a.mul(b), x * y, a.frac + b.frac), (a, b)
            pairs += 1
    assert pairs == len(SMALL_FMTS) ** 2


def test_fmt_neg_and_accumulate_hold_every_exact_value():
    for a in SMALL_FMTS:
        x = fmt_values(a)
        assert a.neg() == Fmt(a.width + 1, a.int_bits + 1, True)
        assert holds(a.neg(), -x, a.frac) and holds(a.neg(), np.abs(x), a.frac)
        assert a.accumulate(1) == a
        for n in range(2, 10):
            acc = a.accumulate(n)
            grow = next(g for g in range(10) if 2**g >= n)
            assert acc == Fmt(a.width + grow, a.int_bits + grow, a.signed)
            # the sums of n values span n*min .. n*max on the same grid
            assert holds(acc, np.arange(n * int(x[0]), n * int(x[-1]) + 1, dtype=np.int64), a.frac), (a, n)


def test_fmt_accumulate_is_exact_for_huge_counts():
    f = Fmt(8, 8, True)
    assert f.accumulate(2**53 + 1).width == 8 + 54
    assert f.accumulate(2**53).width == 8 + 53
    assert f.accumulate(2**40 + 1).width == 8 + 41


def test_fmt_of_and_mixed_signedness():
    assert Fmt.of(parse_dtype("ufixed<8,3,RND,SAT>")) == Fmt(8, 3, False)
    assert Fmt(8, 4, True).add(Fmt(8, 4, False)) == Fmt(10, 6, True)
    assert Fmt(8, 4, False).sub(Fmt(8, 4, False)) == Fmt(9, 5, True)
    assert Fmt(8, 4, True).union(Fmt(6, 1, False)) == Fmt(9, 4, True)
    assert Fmt(8, 4, True).union(Fmt(6, 4, False)) == Fmt(9, 5, True)


def test_fmt_check_limits():
    assert Fmt(64, 10, True).check("x").width == 64
    assert Fmt(63, 63, False).check("x").width == 63
    assert Fmt(64, 10, True).fits_int64() and not Fmt(64, 10, False).fits_int64()
    with pytest.raises(HlsfuseError) as err:
        Fmt(65, 30, True).check("the exact result")
    assert str(err.value) == (
        "the exact result needs a 65-bit signed exact intermediate, more than the 64 bits "
        "hlsfuse computes with; use narrower input types"
    )
    with pytest.raises(HlsfuseError) as err:
        Fmt(64, 64, False).check("the sum")
    assert str(err.value).startswith("the sum needs a 64-bit unsigned exact intermediate")
    int32 = Fmt.of(parse_dtype("int32"))
    int32.mul(int32).check("a product")  # 64 bits: fits
    with pytest.raises(HlsfuseError, match="needs a 65-bit signed"):
        int32.mul(int32).accumulate(2).check("the accumulator")


# --------------------------------------------------------------------------
# assign_quotient: exact quotients x * 2**-frac / n
# --------------------------------------------------------------------------

QUOTIENT_RAWS = np.arange(-160, 161, dtype=np.int64)
DIVISORS = np.arange(1, 10, dtype=np.int64)
# d = frac - F_target: the dividend is shifted left (d <= 0), not at all (d = 1) or right (d > 1)
QUOTIENT_OFFSETS = (-4, -1, 0, 1, 2, 5)


@cache
def quotient_parts(d: int) -> tuple[np.ndarray, ...]:
    """Model parts of every x * 2**-d / n (QUOTIENT_RAWS x DIVISORS, row-major) on the target's LSB grid."""
    values = [Fraction(int(x), int(n)) / Fraction(2) ** d for x in QUOTIENT_RAWS for n in DIVISORS]
    return model_parts(values, 0)


@pytest.mark.parametrize("d", QUOTIENT_OFFSETS)
def test_assign_quotient_exhaustive_small(d):
    """Every mode pair, small types around the quotients' range, every x in -160..160 over every n in 1..9."""
    shape = (len(QUOTIENT_RAWS), len(DIVISORS))
    parts = quotient_parts(d)
    for width, int_bits, signed in ((4, 4, True), (5, 2, True), (6, 6, False), (3, -1, True), (8, 7, True)):
        for quant in QUANT_MODES:
            q = model_increment(parts, quant)
            for overflow in OVERFLOW_MODES:
                t = FixedType(width, int_bits, signed, quant, overflow)
                expected = model_overflow(q, width, signed, overflow).reshape(shape)
                got = assign_quotient(QUOTIENT_RAWS[:, None], t.frac + d, DIVISORS[None, :], t)
                np.testing.assert_array_equal(got, expected, err_msg=f"{t}, d={d}")


@st.composite
def quotients(draw):
    """(t, raws, frac, divisor): any type, a frac up to 70 past either side, raws whose dividend fits 64 bits."""
    t = draw(any_fixed_type())
    frac = draw(st.integers(t.frac - 61, t.frac + 70))
    room = 63 - max(t.frac - frac + 1, 0)  # raw << k must fit an int64
    raw = st.integers(-(2**room), 2**room - 1)
    raws = draw(st.lists(raw, min_size=1, max_size=12))
    divisor = st.integers(1, 12) | st.integers(1, 2**63 - 1)
    divisors = draw(divisor | st.lists(divisor, min_size=len(raws), max_size=len(raws)))
    return t, raws, frac, divisors


@settings(max_examples=200, deadline=None)
@given(case=quotients())
def test_assign_quotient_matches_model(case):
    t, raws, frac, divisors = case
    ns = divisors if isinstance(divisors, list) else [divisors] * len(raws)
    expected = model_from_values([Fraction(x, n) / Fraction(2) ** frac for x, n in zip(raws, ns)], t)
    got = assign_quotient(np.array(raws, dtype=np.int64), frac, np.array(divisors, dtype=np.int64), t)
    np.testing.assert_array_equal(got, expected, err_msg=f"{t}, frac={frac}")


@settings(max_examples=100, deadline=None)
@given(case=quotients())
def test_assign_quotient_by_one_is_assign(case):
    t, raws, frac, _ = case
    x = np.array(raws, dtype=np.int64)
    np.testing.assert_array_equal(assign_quotient(x, frac, 1, t), assign(x, frac, t), err_msg=f"{t}, frac={frac}")


def test_assign_quotient_known_values():
    # the int8 means of [5]*5, [-3]*3, [3, 4] and [-3, -4]: exact quotients stay exact under TRN
    int8 = parse_dtype("int8")
    assert assign_quotient(np.array([25, -9, 7, -7]), 0, np.array([5, 3, 2, 2]), int8).tolist() == [5, -3, 3, -4]
    # -1.5 and -2.5: the ties that separate the modes (DESIGN.md section 3)
    expected = {"TRN": [-2, -3], "TRN_ZERO": [-1, -2], "RND": [-1, -2], "RND_ZERO": [-1, -2],
                "RND_MIN_INF": [-2, -3], "RND_INF": [-2, -3], "RND_CONV": [-2, -2]}
    for quant, values in expected.items():
        t = FixedType(8, 8, True, quant)
        assert assign_quotient(np.array([-3, -5]), 0, 2, t).tolist() == values, quant
        # the same ties reached through a shift: -12 * 2**-2 / 2 = -1.5
        assert assign_quotient(np.array([-12, -20]), 2, 2, t).tolist() == values, quant
    # 1.875 rounds up to 2.0, out of fixed<4,2> (max 1.75): overflow acts after rounding
    assert assign_quotient(np.array([45]), 3, 3, parse_dtype("fixed<4,2,RND,SAT>")).tolist() == [7]
    assert assign_quotient(np.array([45]), 3, 3, parse_dtype("fixed<4,2,RND>")).tolist() == [-8]
    # the largest dividends and divisor: +-(2**63 - 1) * 2**-5 / (2**63 - 1) = +-1/32, half an LSB of fixed<8,4>
    big = 2**63 - 1
    assert assign_quotient(np.array([big, -big]), 5, big, parse_dtype("fixed<8,4,RND>")).tolist() == [1, 0]
    assert assign_quotient(np.array([big, -big]), 5, big, parse_dtype("fixed<8,4,RND_INF>")).tolist() == [1, -1]
    # -(2**63) * 2**-1 / (2**63 - 1) is just below -1/2: no tie, so RND_ZERO rounds it to -1
    assert assign_quotient(np.array([-(2**63)]), 1, big, parse_dtype("fixed<8,8,RND_ZERO>")).tolist() == [-1]
    assert assign_quotient(np.array([-(2**63) + 2]), 1, big - 1, parse_dtype("fixed<8,8,RND_ZERO>")).tolist() == [0]


def test_assign_quotient_shapes_and_divisor_check():
    t = parse_dtype("fixed<8,4,RND,SAT>")
    raws = np.arange(-12, 12, dtype=np.int64).reshape(2, 3, 4)
    assert assign_quotient(raws, 0, 3, t).shape == (2, 3, 4)
    assert assign_quotient(np.int64(24), 0, 3, t).shape == ()
    per_column = np.array([1, 2, 3, 4], dtype=np.int64)
    np.testing.assert_array_equal(
        assign_quotient(raws, 0, per_column, t),
        np.stack([assign_quotient(raws[..., j], 0, int(n), t) for j, n in enumerate(per_column)], -1),
    )
    with pytest.raises(HlsfuseError) as err:
        assign_quotient(raws, 0, np.array([1, 2, 0, 4]), t)
    assert str(err.value) == "assign_quotient: the divisor must be positive, not 0"


def test_fmt_dividend():
    # fixed<20,14> holds a sum with 6 fractional bits; one bit below the target's LSB decides the rounding
    total = Fmt(20, 14, True)
    assert total.dividend(parse_dtype("fixed<8,4>")) == total  # F = 4: 6 >= 4 + 1, no shift
    assert total.dividend(parse_dtype("fixed<16,10>")) == Fmt(21, 14, True)  # F = 6: one bit more
    assert total.dividend(parse_dtype("ufixed<30,10>")) == Fmt(35, 14, True)  # F = 20: 21 - 6 = 15 more
    with pytest.raises(HlsfuseError, match="the division needs a 65-bit signed"):
        total.dividend(parse_dtype("fixed<64,14>")).check("the division")  # F = 50: 20 + 45

