"""hlsfuse's work-alike HLS headers (hw/hls/include) against hlsfuse.types and against AMD's headers.

tests/cxx/ap_types_check.cpp prints, for numbered cases listed here, the raw results of the
ap_fixed/ap_int API that generated code uses: assignment of every raw value of a small source type
to targets in all quantization x overflow modes, construction from doubles/floats/C integers,
full-precision +, -, * and comparisons over every pair of raw values, compound assignment, unary
minus, shifts and conversions, plus hls::stream and hls::axis. The program is built once against
hlsfuse's headers (with -Wall -Wextra -Werror) and every value is compared with hlsfuse.types
(``assign``/``from_float``) or exact integer arithmetic. It is built once more against AMD's own
headers, taken from the hls4ml wheel on PyPI, and must print the same values, except where AMD's
headers have a known defect (``amd_defects``).

g++ runs three times in all (ours, AMD's, one program that must not compile): the machine is shared.
"""

from __future__ import annotations

import math
import random
import re
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hls_support import INCLUDE, KERNELS_ROOT, STRICT, amd_cache, amd_headers, amd_include_flags, built

from hlsfuse.types import OVERFLOW_MODES, QUANT_MODES, FixedType, Fmt, assign, from_float

pytestmark = pytest.mark.gxx

CHECK_CPP = Path(__file__).parent / "cxx" / "ap_types_check.cpp"

# --------------------------------------------------------------------------
# C++ types of the check program and the hlsfuse.types model of assigning to them
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class CppType:
    width: int
    int_bits: int
    signed: bool = True
    quant: str = "TRN"
    overflow: str = "WRAP"
    is_int: bool = False  # ap_int/ap_uint

    @property
    def frac(self) -> int:
        return self.width - self.int_bits

    @property
    def spelling(self) -> str:
        u = "" if self.signed else "u"
        if self.is_int:
            return f"ap_{u}int<{self.width}>"
        modes = "" if (self.quant, self.overflow) == ("TRN", "WRAP") else f", AP_{self.quant}, AP_{self.overflow}"
        return f"ap_{u}fixed<{self.width}, {self.int_bits}{modes}>"

    @property
    def model(self) -> FixedType:
        """Assignment to an ap_int rounds toward zero and wraps: TRN_ZERO/WRAP on a fixed<W,W>."""
        if self.is_int:
            return FixedType(self.width, self.width, self.signed, "TRN_ZERO", "WRAP")
        return FixedType(self.width, self.int_bits, self.signed, self.quant, self.overflow)

    def values(self, patterns) -> np.ndarray:
        """Raw values (int64) of W-bit patterns."""
        p = np.asarray(patterns, dtype=np.uint64).astype(np.int64)
        if self.width < 64:
            p = p & np.int64((1 << self.width) - 1)
            if self.signed:
                p = np.where(p >= (1 << (self.width - 1)), p - np.int64(1 << self.width), p)
        return p

    def all_values(self) -> np.ndarray:
        """Raw values of every pattern 0 .. 2**W - 1, in the order the program walks them."""
        return self.values(np.arange(1 << self.width))


def fx(w, i, q="TRN", o="WRAP"):
    return CppType(w, i, True, q, o)


def ufx(w, i, q="TRN", o="WRAP"):
    return CppType(w, i, False, q, o)


def aint(w):
    return CppType(w, w, True, is_int=True)


def auint(w):
    return CppType(w, w, False, is_int=True)


# --------------------------------------------------------------------------
# The cases
# --------------------------------------------------------------------------

# Sources cover F2 > F, F2 == F, F2 < F of the targets, I > W, I < 0, 1-bit, unsigned, ap_int.
SOURCES = (fx(8, 4), ufx(8, 4), fx(6, 1), fx(7, 9), ufx(5, -2), fx(1, 1), ufx(6, 6), fx(8, -1), aint(5), auint(4))
SHAPES = ((4, 2, True), (4, 2, False), (3, 3, True), (3, 1, False), (5, -1, True), (2, -3, False),
          (1, 1, True), (1, 1, False), (8, 4, True), (6, 8, True), (7, 5, False), (2, 0, True))
MODES = tuple((q, o) for q in QUANT_MODES for o in OVERFLOW_MODES)
INT_TARGETS = (aint(3), auint(3), aint(8), auint(1))

# Every mode x shape, with the sources in rotation: every mode meets every source and every shape meets
# every source. Each pair is one template instantiation; compile time is what limits their number.
ASSIGNS = tuple(
    (SOURCES[(m + k) % len(SOURCES)], CppType(w, i, s, q, o))
    for m, (q, o) in enumerate(MODES)
    for k, (w, i, s) in enumerate(SHAPES)
) + tuple((s, t) for t in INT_TARGETS for s in SOURCES)
# Every mode with two shapes in rotation (all shapes are used), and the ap_int targets.
REALS = tuple(
    CppType(*SHAPES[(m * 2 + k) % len(SHAPES)], q, o) for m, (q, o) in enumerate(MODES) for k in range(2)
) + INT_TARGETS
ARITH = (
    (fx(4, 2), fx(4, 2)), (fx(4, 2), ufx(3, 1)), (ufx(3, 1), fx(4, 2)), (ufx(4, 4), ufx(3, -1)),
    (fx(5, 1), fx(3, 5)), (fx(1, 1), ufx(1, 1)), (fx(4, -2), fx(4, 6)), (ufx(4, 1), ufx(4, 3)),
    (fx(3, 3, "RND", "SAT"), fx(4, 1, "RND_CONV", "SAT_SYM")),
    (aint(4), aint(3)), (auint(4), aint(3)), (auint(3), auint(4)), (fx(4, 2), aint(3)), (auint(3), ufx(4, 1)),
)
ARITH_INT = (fx(4, 2), ufx(4, 1), fx(5, -1), fx(6, 8), aint(4), auint(4))
INT_OPS = ((aint(4), aint(3)), (auint(4), aint(3)), (auint(3), auint(4)), (aint(1), auint(2)))
COMPOUND = (
    (fx(5, 2, "RND", "SAT"), fx(4, 2), fx(4, 1)),
    (ufx(4, 2, "RND_CONV", "SAT_SYM"), ufx(3, 1), fx(3, 2)),
    (fx(6, 3, "TRN_ZERO", "SAT_SYM"), ufx(3, 1), fx(3, 0)),
    (fx(5, 2, "RND_INF", "SAT_ZERO"), aint(3), fx(3, 1)),
    (fx(4, 4, "RND_MIN_INF"), fx(4, 2), auint(3)),
    (fx(5, 1, "RND_ZERO", "SAT"), fx(3, -1), fx(4, 3)),
    (aint(4), aint(3), auint(3)),
    (auint(4), fx(4, 2), fx(3, 1)),  # ap_int compound assignment truncates an ap_fixed operand first
)
UNARY = (fx(4, 2), ufx(4, 2), fx(1, 1), ufx(1, 1), fx(6, -1), fx(5, 8), fx(8, 3, "RND", "SAT"),
         aint(4), auint(4), aint(2), auint(1))
BIT_WRITES = (fx(8, 3), ufx(5, 1), aint(6), auint(7), fx(2, 1))

SMALL_INTS = (-3, -1, 0, 1, 2, 5)
INTS = (0, 1, -1, 2, 3, -3, 7, -8, 100, -100, 127, -128, 255, 2**31 - 1, -(2**31))
LONGS = (2**40 + 3, -(2**40) - 1, 2**62, 2**63 - 1, -(2**63))
UNSIGNEDS = (0, 5, 200, 2**32 - 1)


def make_doubles() -> tuple[float, ...]:
    """Ties and near-ties at every bit position used, random values, extremes and subnormals."""
    rng = np.random.default_rng(7)
    grid = [k / 16 for k in range(-80, 81)]
    near = [s * (k / 32 + e) for s in (1, -1) for k in (1, 3, 5, 9, 17) for e in (2.0**-20, -(2.0**-20))]
    random = [float(v) for v in rng.uniform(-20, 20, 40)] + [float(v) for v in np.round(rng.uniform(-40, 40, 20)) / 8]
    extremes = [0.0, -0.0, 1e30, -1e30, 2.0**62, -(2.0**62), 2.0**63 + 2.0**11, 1e300, -1e300, 3e-300, -5e-324]
    return tuple(grid + near + random + extremes)


DOUBLES = make_doubles()
FLOATS = tuple(float(np.float32(v)) for v in DOUBLES[::3] + (0.1, -0.7, 1e-40, 3.4e38) if abs(v) < 3.5e38)


def c_array(ctype: str, name: str, items) -> str:
    return f"const {ctype} {name}[] = {{{', '.join(items)}}};\n"


def values_inc() -> str:
    def c_int(v: int, suffix: str = "") -> str:
        # -2^31 and -2^63 are not literals in C++ (the minus applies to a too large positive literal)
        return f"({v + 1}{suffix} - 1)" if v in (-(2**31), -(2**63)) else f"{v}{suffix}"

    return (
        c_array("double", "kDoubles", (repr(v) for v in DOUBLES))
        + c_array("float", "kFloats", (repr(v) for v in FLOATS))
        + c_array("int", "kInts", (c_int(v) for v in INTS))
        + c_array("long long", "kLongs", (c_int(v, "LL") for v in LONGS))
        + c_array("unsigned", "kUnsigneds", (f"{v}u" for v in UNSIGNEDS))
        + c_array("int", "kSmallInts", (str(v) for v in SMALL_INTS))
        + c_array("unsigned long long", "kPatterns", (f"{v:#x}ULL" for v in PATTERNS))
    )


# check function of ap_types_check.cpp -> (tags of the lines it prints, its numbered cases)
CHECKS = {
    "check_assign": (("A",), ASSIGNS),
    "check_reals": (("D", "F", "I"), REALS),
    "check_arith": (("T", "R"), ARITH),
    "check_arith_int": (("TC", "RC"), ARITH_INT),
    "check_int_ops": (("TL", "L"), INT_OPS),
    "check_compound": (("M",), COMPOUND),
    "check_unary": (("TU", "U"), UNARY),
    "check_bit_writes": (("B",), BIT_WRITES),
}


def cases_inc() -> str:
    calls = []
    for function, (_, cases) in CHECKS.items():
        for n, case in enumerate(cases):
            types = case if isinstance(case, tuple) else (case,)
            calls.append(f"  {function}<{', '.join(t.spelling for t in types)}>({n});")
    for function, (_, cases) in RANDOM_CHECKS.items():
        calls += [_random_call(function, n, case) for n, case in enumerate(cases)]
    return _random_tables() + "void run_cases() {\n" + "\n".join(calls) + "\n}\n"


def expected_keys(with_defaults: bool) -> set[tuple[str, int]]:
    """The lines the program prints: one per tag and case, the stream and axis lines, and "Z" (defaults),
    which only hlsfuse's headers print."""
    keys = {(tag, n) for checks in (CHECKS, RANDOM_CHECKS) for tags, cases in checks.values() for tag in tags
            for n in range(len(cases))}
    keys |= {("S", 0), ("X", 0)}
    if with_defaults:
        keys |= {("Z", 0), ("Z", 1)}
    return keys


# --------------------------------------------------------------------------
# Building and running
# --------------------------------------------------------------------------


def build(include_flags: list[str], flags: list[str], headers: Path) -> tuple[Path, str]:
    """The check program, compiled (or found in the build cache); returns the binary and g++'s diagnostics."""
    files = {"values.inc": values_inc(), "cases.inc": cases_inc()}
    return built(files, CHECK_CPP, [*flags, *include_flags, "-I", str(KERNELS_ROOT)], (KERNELS_ROOT, headers))


def run(binary: Path) -> dict[tuple[str, int], list[int]]:
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and not done.stderr, done.stderr
    lines = {}
    for line in done.stdout.splitlines():
        tag, ident, *values = line.split()
        lines[(tag, int(ident))] = [int(v, 16) for v in values]
    return lines


@pytest.fixture(scope="module")
def ours():
    # -Wno-unknown-pragmas: hlsfuse/numeric.h (hlsf::lanes) has `#pragma HLS`, which g++ warns about
    flags = [*STRICT, "-Wno-unknown-pragmas"]
    binary, diagnostics = build(["-I", str(INCLUDE)], flags, INCLUDE)
    return binary, diagnostics, run(binary)


@pytest.fixture(scope="module")
def amd():
    headers = amd_headers(amd_cache())
    # Without -Werror (AMD's headers are not warning-free). NDEBUG: AMD's assignment reads a bit beyond
    # the source's MSB (an assert) when every source bit lies below the target's LSB, before choosing the
    # sign bit instead; -O0 because these headers compile slowly.
    include = amd_include_flags(headers)
    binary, _ = build(include, ["-std=c++14", "-O0", "-w", "-DNDEBUG"], headers)
    return run(binary)


# --------------------------------------------------------------------------
# Exact expectations (Python integers)
# --------------------------------------------------------------------------


def bits_of(value: int, width: int) -> int:
    return value & ((1 << width) - 1)


def assign_one(raw: int, frac: int, t: FixedType) -> int:
    return int(assign(np.array([raw], dtype=np.int64), frac, t)[0])


def aligned(raw: int, frac: int, to: int) -> int:
    return raw << (to - frac)


def toward_zero(raw: int, frac: int) -> int:
    """raw * 2**-frac rounded toward zero, as a C cast."""
    if frac <= 0:
        return raw << -frac
    return abs(raw) >> frac if raw >= 0 else -(abs(raw) >> frac)


def sum_format(a: CppType, b: CppType, minus: bool) -> tuple[int, int, bool]:
    """AMD's a+b / a-b: F = max(F1,F2), I = max(I1,I2)+1 (the unsigned one +1 when signedness differs)."""
    i1 = a.int_bits + (1 if b.signed and not a.signed else 0)
    i2 = b.int_bits + (1 if a.signed and not b.signed else 0)
    i = max(i1, i2) + 1
    return i + max(a.frac, b.frac), i, minus or a.signed or b.signed


def mult_format(a: CppType, b: CppType) -> tuple[int, int, bool]:
    return a.width + b.width, a.int_bits + b.int_bits, a.signed or b.signed


def neg_format(a: CppType) -> tuple[int, int, bool]:
    """-a: ap_fixed<W+1, I+1>; for ap_int AMD computes ap_uint<1>(0) - a."""
    return sum_format(auint(1), a, True) if a.is_int else (a.width + 1, a.int_bits + 1, True)


def cmp_bits(*flags: bool) -> int:
    return sum(int(bool(f)) << k for k, f in enumerate(flags))


def shifted(x: int, n: int, t: CppType) -> int:
    """Bits of ``x << n`` in t's own width (n < 0 shifts right; nothing is rounded or saturated)."""
    if n >= t.width:
        return 0
    if n >= 0:
        return bits_of(x << n, t.width)
    return bits_of(x >> min(-n, t.width), t.width)


def double_bits(v: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def float_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


def assert_same(got: list[int], expected: list[int], what: str) -> None:
    if got != expected:
        at = next((k for k, (g, e) in enumerate(zip(got, expected)) if g != e), min(len(got), len(expected)))
        pytest.fail(f"{what}: value {at} is {got[at:at + 4]}, expected {expected[at:at + 4]} "
                    f"({len(got)} values, {len(expected)} expected)", pytrace=False)


# --------------------------------------------------------------------------
# Random cases: any width 1..64, every mode, operands from random 64-bit patterns
# --------------------------------------------------------------------------
#
# Drawn once from a fixed seed, so that every run builds the same program. They are compared between the two
# header sets only (and assignments and conversions from doubles with hlsfuse.types too). They leave out AMD's
# defects 1 to 3 (amd_defects), which the exhaustive cases cover: a 1-bit signed AP_SAT_SYM type, conversions of
# an ap_fixed with I <= 0 to an integer, and ap_int from a double in (-0.5, 0); amd_defects marks defect 4.

_RNG = random.Random(26)
_WIDTHS = (1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 47, 52, 53, 54, 62, 63, 64)


def _random_type(rng: random.Random, max_width: int = 64, ints: float = 0.2, min_int_bits: int = -8,
                 mode: tuple[str, str] | None = None) -> CppType:
    width = rng.choice([w for w in _WIDTHS if w <= max_width] + [rng.randint(1, max_width)])
    signed = rng.random() < 0.6
    if rng.random() < ints:
        return aint(width) if signed else auint(width)
    quant, overflow = mode or rng.choice(MODES)
    if width == 1 and signed and overflow == "SAT_SYM":
        overflow = "SAT"
    return CppType(width, rng.randint(max(min_int_bits, -8), width + 8), signed, quant, overflow)


def _fits(*formats: tuple[int, int, bool]) -> bool:
    """Every exact intermediate fits the work-alike headers' 64 bits."""
    return all(f[0] <= 64 for f in formats)


def _draw(make, accept, count: int) -> tuple:
    cases = []
    while len(cases) < count:
        case = make(len(cases))
        if accept(case):
            cases.append(case)
    return tuple(cases)


def _assign_case(n: int) -> tuple[CppType, CppType]:
    dst = _random_type(_RNG, mode=MODES[n % len(MODES)])
    return _random_type(_RNG, min_int_bits=1 if dst.is_int else -8), dst


R_ASSIGNS = _draw(_assign_case, lambda c: True, 2 * len(MODES))
R_REALS = _draw(lambda n: _random_type(_RNG, mode=MODES[n % len(MODES)]), lambda t: True, len(MODES))
R_ARITH = _draw(lambda n: (_random_type(_RNG), _random_type(_RNG)),
                lambda c: _fits(sum_format(*c, False), sum_format(*c, True), mult_format(*c)), 50)
R_ARITH_INT = _draw(lambda n: _random_type(_RNG, max_width=32),
                    lambda a: _fits(sum_format(a, aint(32), True), mult_format(a, aint(32))), 12)
R_COMPOUND = _draw(
    lambda n: (_random_type(_RNG, mode=MODES[n % len(MODES)]), _random_type(_RNG, 32, min_int_bits=1),
               _random_type(_RNG, 32, min_int_bits=1)),
    lambda c: _fits(mult_format(c[1], c[2]), sum_format(c[0], CppType(*mult_format(c[1], c[2])[:2]), False),
                    sum_format(c[0], c[2], True), mult_format(c[0], c[2])), 28)
R_UNARY = _draw(lambda n: _random_type(_RNG, max_width=63, min_int_bits=1, mode=MODES[n % len(MODES)]),
                lambda t: True, 28)
R_INT_OPS = _draw(lambda n: (_random_type(_RNG, ints=1.0), _random_type(_RNG, ints=1.0)),
                  lambda c: max(c[0].width + (c[1].signed and not c[0].signed),
                                c[1].width + (c[0].signed and not c[1].signed)) <= 64, 16)  # a & b
R_STREAMS = ((fx(16, 6, "RND", "SAT"), 4), (ufx(3, 1), 2), (aint(64), 3), (fx(64, 40), 2))


def _patterns(rng: random.Random) -> tuple[int, ...]:
    """64-bit patterns: the edges of every width (0, all ones, sign bits, maxima), then random ones."""
    edges = [0, 1, 2**64 - 1, 2**63, 2**63 - 1, 2**31, 2**31 - 1, 2**32 - 1, 0x5555555555555555, 0xAAAAAAAAAAAAAAAA]
    return tuple(edges + [rng.getrandbits(64) for _ in range(38)])


PATTERNS = _patterns(_RNG)


def _doubles(t: CppType, rng: random.Random) -> tuple[float, ...]:
    """Doubles around t's range and grid: random values, ties and near-ties at its LSB, values beyond its range."""
    lsb = math.ldexp(1.0, -t.frac)
    top = math.ldexp(1.0, t.int_bits)
    values = [0.0, -0.0, lsb, -lsb, top, -top, top * 3, -top * 3, 1e300, -1e300]
    for _ in range(24):
        raw = rng.randint(-(1 << min(t.width, 53)), 1 << min(t.width, 53))
        scale = lsb * (1 << max(0, t.width - 53))
        values += [raw * scale, (raw + 0.5) * scale, (raw + 0.5) * scale * (1 + 2.0**-40)]
    values = [v for v in values if math.isfinite(v)]
    if t.is_int:  # AMD's defect: ap_int from a double in (-0.5, 0)
        values = [v for v in values if not -0.5 < v < 0]
    return tuple(values)


def _shifts(t: CppType) -> tuple[int, ...]:
    return (-3, -1, 0, 1, 2, t.width - 1, t.width, t.width + 1, 2 * t.width + 5)


def _ranges(t: CppType, rng: random.Random) -> tuple[tuple[int, int], ...]:
    """(hi, lo) bit ranges: the whole value, its top bit, random ones."""
    spans = [(t.width - 1, 0), (t.width - 1, t.width - 1)]
    for _ in range(3):
        lo = rng.randrange(t.width)
        spans.append((rng.randrange(lo, t.width), lo))
    return tuple(spans)


R_DOUBLES = tuple(_doubles(t, _RNG) for t in R_REALS)
R_RANGES = tuple(_ranges(t, _RNG) for t in R_UNARY)

# check function -> (tags of the lines it prints, its numbered cases)
RANDOM_CHECKS = {
    "random_assign": (("QA",), R_ASSIGNS),
    "random_reals": (("QD", "QF", "QI"), R_REALS),
    "random_arith": (("QT", "QR"), R_ARITH),
    "random_arith_int": (("QC",), R_ARITH_INT),
    "random_compound": (("QM",), R_COMPOUND),
    "random_unary": (("QU",), R_UNARY),
    "random_int_ops": (("QL",), R_INT_OPS),
    "random_streams": (("QS",), R_STREAMS),
}


def _random_call(function: str, n: int, case) -> str:
    if function == "random_reals":
        return f"  random_reals<{case.spelling}>({n}, kRealDoubles{n}, kRealFloats{n});"
    if function == "random_unary":
        return f"  random_unary<{case.spelling}>({n}, kShifts{n}, kRanges{n});"
    if function == "random_streams":
        t, lanes = case
        return f"  random_streams<{t.spelling}, {lanes}>({n});"
    types = case if isinstance(case, tuple) else (case,)
    return f"  {function}<{', '.join(t.spelling for t in types)}>({n});"


def _random_tables() -> str:
    text = ""
    for n, values in enumerate(R_DOUBLES):
        floats = [float(np.float32(v)) for v in values if abs(v) < 3.4e38]
        text += c_array("double", f"kRealDoubles{n}", (repr(v) for v in values))
        text += c_array("float", f"kRealFloats{n}", (repr(v) + "f" for v in floats))
    for n, (t, spans) in enumerate(zip(R_UNARY, R_RANGES)):
        text += c_array("int", f"kShifts{n}", (str(k) for k in _shifts(t)))
        text += f"const int kRanges{n}[][2] = {{{', '.join(f'{{{hi}, {lo}}}' for hi, lo in spans)}}};\n"
    return text


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------


def test_headers_compile_without_warnings_and_print_every_case(ours):
    _, diagnostics, lines = ours
    assert diagnostics == ""
    assert set(lines) == expected_keys(with_defaults=True)


def test_assignment_matches_hlsfuse_types(ours):
    lines = ours[2]
    for n, (src, dst) in enumerate(ASSIGNS):
        expected = assign(src.all_values(), src.frac, dst.model)
        expected = [bits_of(int(v), dst.width) for v in expected]
        assert_same(lines[("A", n)], expected, f"{dst.spelling} = {src.spelling}")


def test_construction_from_double_float_and_c_integers(ours):
    lines = ours[2]
    c_ints = INTS + LONGS + UNSIGNEDS
    for n, t in enumerate(REALS):
        for tag, values in (("D", DOUBLES), ("F", FLOATS)):
            expected = [bits_of(int(v), t.width) for v in from_float(np.array(values), t.model)]
            assert_same(lines[(tag, n)], expected, f"{t.spelling} from {'double' if tag == 'D' else 'float'}")
        expected = [bits_of(assign_one(v, 0, t.model), t.width) for v in c_ints]
        assert_same(lines[("I", n)], expected, f"{t.spelling} from C integers")


def test_arithmetic_is_full_precision(ours):
    lines = ours[2]
    for n, (a, b) in enumerate(ARITH):
        plus, minus, mult = sum_format(a, b, False), sum_format(a, b, True), mult_format(a, b)
        fa, fb = Fmt(a.width, a.int_bits, a.signed), Fmt(b.width, b.int_bits, b.signed)
        # DESIGN.md section 3 and hlsfuse.types.Fmt agree with AMD's result types for + and *
        assert plus == (fa.add(fb).width, fa.add(fb).int_bits, fa.add(fb).signed)
        assert mult == (fa.mul(fb).width, fa.mul(fb).int_bits, fa.mul(fb).signed)
        assert lines[("T", n)] == [*plus, *minus, *mult], f"result types of {a.spelling} and {b.spelling}"
        f = max(a.frac, b.frac)
        expected = []
        for x in a.all_values().tolist():
            for y in b.all_values().tolist():
                xs, ys = aligned(x, a.frac, f), aligned(y, b.frac, f)
                expected += [bits_of(xs + ys, plus[0]), bits_of(xs - ys, minus[0]), bits_of(x * y, mult[0]),
                             cmp_bits(xs < ys, xs <= ys, xs > ys, xs >= ys, xs == ys, xs != ys)]
        assert_same(lines[("R", n)], expected, f"{a.spelling} with {b.spelling}")


def test_arithmetic_with_c_int_operands(ours):
    lines = ours[2]
    c = aint(32)  # a C int acts as ap_int<32>, i.e. ap_fixed<32,32>
    for n, a in enumerate(ARITH_INT):
        plus, minus, mult = sum_format(a, c, False), sum_format(c, a, True), mult_format(a, c)
        assert lines[("TC", n)] == [*plus, *minus, *mult], f"result types of {a.spelling} with int"
        f = max(a.frac, 0)
        expected = []
        for x in a.all_values().tolist():
            for v in SMALL_INTS:
                xs, vs = aligned(x, a.frac, f), aligned(v, 0, f)
                expected += [bits_of(xs + vs, plus[0]), bits_of(vs - xs, minus[0]), bits_of(x * v, mult[0]),
                             cmp_bits(xs < vs, xs <= vs, vs < xs, vs <= xs, xs == vs, vs != xs)]
        assert_same(lines[("RC", n)], expected, f"{a.spelling} with int")


def test_ap_int_bitwise_shifts_and_increments(ours):
    lines = ours[2]
    for n, (a, b) in enumerate(INT_OPS):
        ia = a.int_bits + (1 if b.signed and not a.signed else 0)
        ib = b.int_bits + (1 if a.signed and not b.signed else 0)
        logic = max(ia, ib)
        assert lines[("TL", n)] == [logic, logic, a.signed or b.signed], f"type of {a.spelling} & {b.spelling}"
        expected = []
        for x in a.all_values().tolist():
            for k, y in enumerate(b.all_values().tolist()):
                up2 = int(a.values([bits_of(x + 2, a.width)])[0])
                down3 = int(a.values([bits_of(up2 - 3, a.width)])[0])
                expected += [bits_of(x & y, logic), bits_of(x | y, logic), bits_of(x ^ y, logic),
                             bits_of(~x, a.width), shifted(x, y, a), shifted(x, -y, a),
                             bits_of(up2, a.width), bits_of(down3, a.width), bits_of(x, 64),
                             bits_of(SMALL_INTS[k & 3], 32)]
        assert_same(lines[("L", n)], expected, f"ap_int operations of {a.spelling} with {b.spelling}")


def compound_operand(acc_t: CppType, raw: int, frac: int, is_fixed: bool) -> tuple[int, int]:
    """AMD rounds an ap_fixed operand of an ap_int compound assignment toward zero first."""
    if acc_t.is_int and is_fixed:
        return toward_zero(raw, frac), 0
    return raw, frac


def test_compound_assignment_rounds_once_per_statement(ours):
    lines = ours[2]
    for n, (acc_t, a, b) in enumerate(COMPOUND):
        expected = []
        for x in a.all_values().tolist():
            for y in b.all_values().tolist():
                acc = assign_one(x, a.frac, acc_t.model)  # Acc acc = a;
                for op, raw, frac, is_fixed in (("+", x * y, a.frac + b.frac, not (a.is_int and b.is_int)),
                                                ("-", y, b.frac, not b.is_int), ("*", y, b.frac, not b.is_int)):
                    raw, frac = compound_operand(acc_t, raw, frac, is_fixed)
                    if op == "*":
                        acc = assign_one(acc * raw, acc_t.frac + frac, acc_t.model)
                    else:
                        f = max(acc_t.frac, frac)
                        sign = 1 if op == "+" else -1
                        acc = assign_one(aligned(acc, acc_t.frac, f) + sign * aligned(raw, frac, f), f, acc_t.model)
                    expected.append(bits_of(acc, acc_t.width))
        assert_same(lines[("M", n)], expected, f"{acc_t.spelling} += {a.spelling} * {b.spelling}; -= b; *= b")


def unary_expected(a: CppType) -> list[tuple[str, int]]:
    """(what, value) for each item check_unary prints, in order."""
    neg = neg_format(a)
    w, half = a.width, a.width // 2
    items = []
    for x in a.all_values().tolist():
        items.append(("-a", bits_of(-x, neg[0])))
        for k in range(-2, w + 2):
            items += [(f"a << {k}", shifted(x, k, a)), (f"a >> {k}", shifted(x, -k, a))]
        once = shifted(x, 1, a)
        items += [("a <<= 1", once), ("a >>= 2", shifted(int(a.values([once])[0]), -2, a))]
        t = toward_zero(x, a.frac)
        items += [("to_int", bits_of(t, 32)), ("to_uint", bits_of(t, 32)), ("to_int64", bits_of(t, 64)),
                  ("to_uint64", bits_of(t, 64))]
        v = math.ldexp(x, -a.frac)
        items += [("to_double", double_bits(v)), ("to_float", float_bits(v))]
        p = bits_of(x, w)
        items += [("range", (p >> half) & ((1 << (w - half)) - 1)), ("[0]", p & 1), ("[W-1]", p >> (w - 1))]
        items += [("cmp double", cmp_bits(v < 0.75, v <= -0.5, v > -1.25, v >= 1.0, v == 0.5, v != 0.0)),
                  ("cmp int", cmp_bits(v > 0.75, v >= -0.5, v > 1, v <= 0, v == 0, v != -1))]
    return items


def test_negation_shifts_conversions_and_scalar_comparisons(ours):
    lines = ours[2]
    for n, a in enumerate(UNARY):
        assert lines[("TU", n)] == list(neg_format(a)), f"type of -{a.spelling}"
        expected = [value for _, value in unary_expected(a)]
        assert_same(lines[("U", n)], expected, f"unary operations of {a.spelling}")


def test_range_and_bit_writes(ours):
    lines = ours[2]
    for n, a in enumerate(BIT_WRITES):
        p = (1 << a.width) - 1
        p &= ~((1 << (a.width // 2 + 1)) - 1)  # x.range(W/2, 0) = 0
        cleared = p & ~(1 << (a.width - 1))    # x[W-1] = 0
        assert lines[("B", n)] == [p, cleared, cleared | 1, cleared | 1], a.spelling


def test_default_construction_poisons_the_value(ours):
    """AMD leaves a default-constructed value undefined; the work-alikes poison it, so that code reading it
    before writing it fails in every C simulation: never 0, and a different value at each construction."""
    values = ours[2][("Z", 0)]
    assert len(values) == 8 * 6 and all(v != 0 for v in values), values
    for kind in (0, 3, 4, 5):  # ap_fixed<8,3>, ap_uint<5>, ap_int<64>, ap_uint<100>; a 1-bit poison can only be 1
        seen = values[kind::6]
        assert len(set(seen)) >= 5, (kind, seen)
    data, keep, strb, last = ours[2][("Z", 1)]  # an AXI4-Stream packet's fields: all poisoned as well
    assert data and keep and strb and last


def test_stream_model(ours):
    lines = ours[2]
    # empty, full, size after 3 writes, the 3 values in order, empty, read_nb on empty, then a second stream
    assert lines[("S", 0)] == [1, 0, 3, 48, bits_of(-72, 8), 4, 1, 0, 1, 1, 120, 1]


def test_axis_side_channels(ours):
    lines = ours[2]
    data = bits_of(int(from_float(np.array([2.7]), FixedType(12, 4, True, "RND", "SAT"))[0]), 12)
    # keep widths (12-bit fixed, ap_int<32>, strb of ap_uint<8>, 3-bit ufixed), then a packet through a stream
    assert lines[("X", 0)] == [2, 4, 1, 1, data, 3, 3, 1, bits_of(-5, 32)]


def test_reading_an_empty_stream_names_it_and_aborts(ours):
    binary = ours[0]
    done = subprocess.run([str(binary), "read-empty"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "ERROR: hls::stream 'lonely_channel' is read while empty" in done.stderr
    assert "unreachable" not in done.stdout


def test_leftover_stream_data_is_reported(ours):
    done = subprocess.run([str(ours[0]), "leftover"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "WARNING: hls::stream 'full_channel' contains leftover data (2 elements)" in done.stderr


def test_unsupported_widths_and_modes_are_compile_errors(tmp_path):
    source = tmp_path / "bad.cpp"
    source.write_text(
        "#include <ap_fixed.h>\n"
        "int main() {\n"
        "  ap_fixed<40, 10> a = 1.5;\n"
        "  ap_fixed<30, 5> b = 2.5;\n"
        "  auto product = a * b;\n"
        "  ap_uint<64> u = 1;\n"
        "  auto sum = u + u;\n"
        "  ap_fixed<8, 3, AP_TRN, AP_WRAP, 1> n = 0.5;\n"
        "  ap_fixed<8, 3, AP_TRN, AP_WRAP_SM> m = 0.5;\n"
        "  return product.to_int() + sum.to_int() + n.to_int() + m.to_int();\n"
        "}\n"
    )
    done = subprocess.run(["g++", *STRICT, "-fsyntax-only", "-I", str(INCLUDE), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    err = done.stderr
    assert "ap_fixed_base<70, 15, true" in err and "bad.cpp:5:" in err  # the 70-bit product
    assert "ap_int_base<65, false" in err and "bad.cpp:7:" in err  # the 65-bit sum
    assert "hlsfuse ap_fixed/ap_ufixed: width must be 1..64" in err
    assert "hlsfuse ap_int/ap_uint: an exact intermediate (product, sum, negation) wider than 64 bits" in err
    assert "saturation bits N other than 0 are not supported" in err and "bad.cpp:8:" in err
    assert "overflow mode AP_WRAP_SM is not supported" in err and "bad.cpp:9:" in err


def amd_defects() -> set[tuple[str, int, int]]:
    """Values (tag, case, position) where AMD's headers, as shipped in hls4ml 1.3.0, are wrong.

    1. ap_int/ap_uint from a double or float in (-0.5, 0) gives 1, not 0: AMD's conversion sets -1 when
       every mantissa bit is shifted out, then negates the result.
    2. Converting an ap_fixed with I <= 0 to an integer (ap_int assignment, to_int() and friends) is wrong:
       AMD's to_ap_int_base() has no branch for I < 0 (it reads an uninitialized value), and for I = 0 it
       adds the C rounding's carry to a 1-bit zero, giving -1 for a negative value instead of 0.
    3. AP_SAT_SYM on a 1-bit signed type acts as AP_SAT, giving -1 where the rounded value is negative:
       AMD sets the sign bit and then bit 0 for "min + 1", and both are the same bit. DESIGN.md section 3
       clips to [-hi, hi] = [0, 0].
    4. <, <=, >, >= of operands of different signedness compare them as unsigned numbers (C's rule) when,
       after aligning their binary points, the unsigned one is at least as wide as the signed one and the
       two are not both narrower than 32 bits: a negative value compares greater than any unsigned one.
    5. == and != compare the bits of both operands extended to a common width (at least 32 bits): a negative
       value equals the unsigned value of the same bits.
    (``amd_compares_wrongly`` models 4 and 5.) hlsfuse's headers follow DESIGN.md section 3 in all five; every
    other value must be identical. Generated code never meets them: graph types exclude 1-bit signed SAT_SYM, no
    integer conversion of an ap_fixed with I <= 0 and no ap_int from a double is emitted, maximum and minimum of
    operands of different signedness decide the sign first (templates/hls/ops.j2), and no other comparison has
    operands of different signedness.
    """
    def as_sat(t: CppType) -> FixedType | None:
        """For a 1-bit signed AP_SAT_SYM type, the AP_SAT type that AMD actually implements."""
        if t.width == 1 and t.signed and not t.is_int and t.overflow == "SAT_SYM":
            return FixedType(1, t.int_bits, True, t.quant, "SAT")
        return None

    defects = set()
    for n, (src, dst) in enumerate(ASSIGNS):
        sat = as_sat(dst)
        negative = assign(src.all_values(), src.frac, sat) < 0 if sat else np.zeros(1 << src.width, dtype=bool)
        for k in range(1 << src.width):
            if (dst.is_int and src.int_bits <= 0 and not src.is_int) or negative[k]:
                defects.add(("A", n, k))
    for n, t in enumerate(REALS):
        sat = as_sat(t)
        for tag, values in (("D", DOUBLES), ("F", FLOATS), ("I", INTS + LONGS + UNSIGNEDS)):
            for k, v in enumerate(values):
                negative = sat is not None and (from_float(np.array([v]), sat)[0] < 0)
                if (t.is_int and -0.5 < v < 0) or negative:
                    defects.add((tag, n, k))
    for n, a in enumerate(UNARY):
        if a.int_bits <= 0 and not a.is_int:
            for k, (what, _) in enumerate(unary_expected(a)):
                if what.startswith("to_") and "int" in what:
                    defects.add(("U", n, k))
    pairs = len(PATTERNS)
    for n, (a, b) in enumerate(R_ARITH):  # the mask of a < b, a <= b, a > b, a >= b, a == b, a != b
        for k in range(pairs):
            if amd_compares_wrongly(a, PATTERNS[k], b, PATTERNS[(5 * k + 1) % pairs]):
                defects.add(("QR", n, 4 * k + 3))
    c_int = aint(32)
    for n, a in enumerate(R_UNARY):  # the mask of ..., a > 1, 0 >= a, a == 0, -1 != a: the last of each pattern
        per_pattern = 1 + 4 * len(_shifts(a)) + 8 + 6 * len(R_RANGES[n]) + 2
        for k, p in enumerate(PATTERNS):
            if any(amd_compares_wrongly(x, px, y, py, (relation,)) for x, px, y, py, relation in
                   ((a, p, c_int, 1, "order"), (c_int, 0, a, p, "order"), (a, p, c_int, 0, "equality"),
                    (c_int, 2**64 - 1, a, p, "equality"))):
                defects.add(("QU", n, (k + 1) * per_pattern - 1))
    for n, a in enumerate(R_ARITH_INT):  # per pattern and int v: a + v, v - a, a * v, the comparisons' mask
        for k, p in enumerate(PATTERNS):
            for j, v in enumerate(INTS):
                if amd_compares_wrongly(a, p, c_int, v) or amd_compares_wrongly(c_int, v, a, p):
                    defects.add(("QC", n, 4 * (k * len(INTS) + j) + 3))
    return defects


def test_the_model_of_amds_comparison_defects_is_exact(ours, amd):
    """Every comparison amd_compares_wrongly marks does differ between the two header sets (and, with the previous
    test, every other one agrees): the model of AMD's defects 4 and 5 is exact, not a blanket exception."""
    marked = sorted(d for d in amd_defects() if d[0] in ("QR", "QU", "QC"))
    assert len(marked) > 100
    agree = [d for d in marked if amd[d[:2]][d[2]] == ours[2][d[:2]][d[2]]]
    assert not agree, agree[:5]


def raw_value(t: CppType, pattern: int) -> int:
    """The raw integer of t whose bits are the low bits of ``pattern``."""
    bits = pattern & ((1 << t.width) - 1)
    return bits - (1 << t.width) if t.signed and bits >> (t.width - 1) else bits


def amd_compares_wrongly(a: CppType, pa: int, b: CppType, pb: int, relations=("order", "equality")) -> bool:
    """AMD's defects 4 and 5: whether AMD's a < b (the order: <, <=, >, >=) or a == b (the equality: ==, !=) differs
    from the true relation of the values a and b whose bits are the low bits of patterns pa and pb.

    ap_fixed_base's comparisons extend the operand with fewer fractional bits to the other's (by one more bit when
    it is the left one; an ap_int or a C int acts as ap_fixed<W, W>), then compare the raw integers with ap_private:
    ==, and <, <= ... of operands of different signedness unless both are narrower than 32 bits or the signed one is
    the wider, compare the bits of both extended to a common width, as unsigned numbers."""
    ra, rb = raw_value(a, pa), raw_value(b, pb)
    f = max(a.frac, b.frac)
    xa, xb = ra << (f - a.frac), rb << (f - b.frac)  # the aligned raw integers: their order is the values' order
    wa, wb = a.width + max(0, b.frac - a.frac), b.width + max(0, a.frac - b.frac)
    if a.frac < b.frac:
        wa += 1
    eq_bits = max(wa, wb, 32)
    amd_eq = xa % (1 << eq_bits) == xb % (1 << eq_bits)
    amd_lt = xa < xb
    if a.signed != b.signed and not (wa < 32 and wb < 32) and (wb >= wa if a.signed else wa >= wb):
        lt_bits = max(wa, wb) + 1
        amd_lt = xa % (1 << lt_bits) < xb % (1 << lt_bits)
    return ("equality" in relations and amd_eq != (xa == xb)) or ("order" in relations and amd_lt != (xa < xb))


def test_amd_headers_give_identical_results(ours, amd):
    """The same program built with AMD's ap_types (hls4ml 1.3.0) prints the same values, but for
    AMD's own defects listed in amd_defects()."""
    mine = {key: values for key, values in ours[2].items() if key[0] != "Z"}
    assert set(amd) == set(mine) == expected_keys(with_defaults=False)
    assert all(len(amd[key]) == len(values) for key, values in mine.items())
    defects = amd_defects()
    differing = [
        (key, k, amd[key][k], values[k])
        for key, values in sorted(mine.items())
        for k in range(len(values))
        if amd[key][k] != values[k] and (*key, k) not in defects
    ]
    assert not differing, "\n".join(f"{key}[{k}]: AMD {a:x}, hlsfuse {o:x}" for key, k, a, o in differing[:10])


# --------------------------------------------------------------------------
# ap_int/ap_uint wider than 64 bits (hw/hls/include/ap_int_wide.h): tests/cxx/ap_wide_check.cpp runs the
# operations listed on its stdin, and prints results compared with Python's integers
# --------------------------------------------------------------------------

WIDE_CHECK = Path(__file__).parent / "cxx" / "ap_wide_check.cpp"
WIDTHS = (65, 128, 200)


def _words(p: int, w: int) -> list[str]:
    return [f"{(p >> (64 * k)) & (2**64 - 1):x}" for k in range((w + 63) // 64)]


def _signed(p: int, bits: int) -> int:
    p &= (1 << bits) - 1
    return p - (1 << bits) if p >> (bits - 1) else p


def _cases(rng: random.Random):
    """(input line, expected output line) pairs for every width, signedness and operation."""
    for w in WIDTHS:
        mask = (1 << w) - 1
        for s in (0, 1):
            for _ in range(6):
                p = rng.getrandbits(w) if rng.random() < 0.8 else rng.choice([0, mask, 1 << (w - 1)])
                q = rng.getrandbits(w)
                v = _signed(p, w) if s else p
                head = f"{w} {s}"
                xs = " ".join(_words(p, w))
                lo = rng.randrange(w)
                hi = rng.randrange(lo, w)
                n = hi - lo + 1
                field = (p >> lo) & ((1 << n) - 1)
                yield f"{head} words {xs}", " ".join(_words(p, w))
                yield f"{head} read {xs} {hi} {lo}", " ".join([*_words(field, w), f"{field & (2**64 - 1):x}"])
                put = (p & ~(((1 << n) - 1) << lo) | ((q & ((1 << n) - 1)) << lo)) & mask
                yield f"{head} write {xs} {hi} {lo} {' '.join(_words(q, w))}", " ".join(_words(put, w))
                hi64 = rng.randrange(lo, min(lo + 64, w))
                n64 = hi64 - lo + 1
                v64 = rng.getrandbits(64)
                put = (p & ~(((1 << n64) - 1) << lo) | ((v64 & ((1 << n64) - 1)) << lo)) & mask
                yield f"{head} write64 {xs} {hi64} {lo} {v64:x}", " ".join(_words(put, w))
                for k in (0, 1, 31, 63, 64, 65, w - 1, w, w + 7, rng.randrange(w)):
                    yield f"{head} shl {xs} {k}", " ".join(_words((p << k) & mask, w))
                    yield f"{head} shr {xs} {k}", " ".join(_words((v >> k) & mask, w))
                yield f"{head} shl {xs} -3", " ".join(_words((v >> 3) & mask, w))
                yield f"{head} not {xs}", " ".join(_words(~p & mask, w))
                i, b = rng.randrange(w), rng.randrange(2)
                yield f"{head} bit {xs} {i} {b}", " ".join([*_words(p & ~(1 << i) | (b << i), w), str(b)])
                c = rng.choice([-1, -(2**63), 2**63 - 1, rng.randrange(-(2**40), 2**40)])
                yield f"{head} int {xs} {c}", " ".join(_words(c & mask, w))
                e = rng.randrange(-2048, 2048)
                lanes = w // 12
                packed = p & ~((1 << (12 * lanes)) - 1) | sum((e & 0xFFF) << (12 * k) for k in range(lanes))
                yield f"{head} elem {xs} {e}", " ".join([*_words(packed, w), *[str(e)] * lanes])
                same = q if rng.random() < 0.5 else p
                yield (f"{head} eq {xs} {' '.join(_words(same, w))}",
                       f"{int(same == p)} {int(same != p)} {int(v == 5)}")
                yield f"{head} to {xs}", f"{_signed(p, 32)} {p & (2**32 - 1)} {_signed(p, 64)} {p & (2**64 - 1):x}"
        five = " ".join(_words(5, w))
        yield f"{w} 1 eq {five} {five}", "1 0 1"


@pytest.mark.parametrize("headers", ["work-alike", "amd"])
def test_wide_ap_int_and_ap_uint_match_python_integers(tmp_path, headers):
    """ap_int/ap_uint of 65, 128 and 200 bits (the TDATA of ports of many lanes) under both header sets."""
    exe = tmp_path / "ap_wide_check"
    if headers == "amd":
        flags = [*amd_include_flags(amd_headers(amd_cache())), "-std=c++14", "-O0", "-w", "-DNDEBUG"]
    else:
        flags = [*STRICT, "-I", str(INCLUDE)]
    done = subprocess.run(["g++", *flags, str(WIDE_CHECK), "-o", str(exe)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cases = list(_cases(random.Random(5)))
    run = subprocess.run([str(exe)], input="\n".join(line for line, _ in cases) + "\n",
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = run.stdout.splitlines()
    assert len(got) == len(cases)
    wrong = [(line, want, have.strip()) for (line, want), have in zip(cases, got) if have.strip() != want]
    assert not wrong, wrong[:5]


def test_wide_arithmetic_is_a_compile_error(tmp_path):
    source = tmp_path / "bad.cpp"
    source.write_text("#include <ap_int.h>\n"
                      "int main() {\n"
                      "  ap_uint<128> a = 1;\n"
                      "  auto sum = a + a;\n"
                      "  ap_uint<64> u = 1;\n"
                      "  auto wider = u * u;\n"
                      "  return sum.to_int() + wider.to_int();\n"
                      "}\n")
    done = subprocess.run(["g++", *STRICT, "-fsyntax-only", "-I", str(INCLUDE), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "bad.cpp:4:" in done.stderr  # no + on 128 bits
    assert "an exact intermediate (product, sum, negation) wider than 64 bits is not supported" in done.stderr


# --------------------------------------------------------------------------
# The API of the headers that generated code and the kernel library use, and the cases that cover it
# --------------------------------------------------------------------------
#
# Read off the compiler, not the sources: designs of every stage kind, template branch and kernel
# (inventory_designs; their ROMs and tables also in the synthesis form, HLSFUSE_AP_ROMS) and the kernel library's
# check program (tests/test_hls_kernels.py) are built against the work-alike headers at -O0 -fno-inline, so that
# every function they call is emitted as a symbol. The public
# members and free operators of ap_fixed/ap_int/hls::stream among the demangled symbols, without template
# arguments (ap_int_wide: an ap_int/ap_uint of more than 64 bits), are the list. COVERAGE names, for each, the
# lines of the check programs that exercise it and that both header sets must print alike: the tags of
# ap_types_check.cpp (exhaustive at small widths; Q...: random operands at any width) and "wide" for
# ap_wide_check.cpp. An entry without coverage, or coverage of an entry nothing uses any more, fails the test.

COVERAGE = {
    # construction: undefined with AMD's headers (poisoned here, "Z"); converting, from C numbers
    "ap_fixed_base::ap_fixed_base()": ("Z",),
    "ap_fixed_base::ap_fixed_base(ap_fixed_base const&)": ("A", "QA"),
    "ap_fixed_base::ap_fixed_base(double)": ("D", "QD"),
    "ap_fixed_base::ap_fixed_base(float)": ("F", "QF"),
    "ap_fixed_base::ap_fixed_base(int)": ("I", "QI"),
    "ap_int_base::ap_int_base()": ("Z",),
    "ap_int_wide::ap_int_wide()": ("Z",),
    "ap_int_base::ap_int_base(bool)": ("QI",),
    "ap_int_base::ap_int_base(int)": ("I", "QI"),
    "ap_int_base::ap_int_base(long)": ("QI",),
    "ap_int_base::ap_int_base(long long)": ("I",),
    "ap_int_base::ap_int_base(ap_int_base const&)": ("A",),
    # arithmetic at full precision, compound assignment, comparisons
    "ap_fixed_base::operator+(ap_fixed_base const&) const": ("R", "QR"),
    "ap_fixed_base::operator-(ap_fixed_base const&) const": ("R", "QR"),
    "ap_fixed_base::operator*(ap_fixed_base const&) const": ("R", "QR"),
    "ap_fixed_base::operator-() const": ("U", "QU"),
    "ap_fixed_base::operator+=(ap_fixed_base const&)": ("M", "QM"),
    "ap_fixed_base::operator<(ap_fixed_base const&) const": ("R", "QR"),
    "ap_fixed_base::operator>(ap_fixed_base const&) const": ("R", "QR"),
    "ap_int_base::operator==(ap_int_base const&) const": ("R", "QR", "QL"),
    # ap_int arithmetic (the packed products of mac.h: the packed word, its product, a group's sum, the split)
    "ap_int_base::operator+(ap_int_base const&) const": ("R",),
    "ap_int_base::operator-(ap_int_base const&) const": ("R",),
    "ap_int_base::operator*(ap_int_base const&) const": ("R",),
    "ap_int_base::operator<<(int) const": ("U",),
    "ap_int_base::operator>>(int) const": ("U",),
    "operator==(ap_int_base const&, int)": ("RC", "QC", "QU"),
    # conversions, sign
    "ap_fixed_base::to_double() const": ("U", "QU"),
    "ap_fixed_base::to_int() const": ("U", "QU"),
    "ap_fixed_base::is_neg() const": ("QU",),
    "ap_int_base::to_int64() const": ("U", "QU"),
    "ap_int_base::to_uint64() const": ("U", "QU"),
    # raw bits: range() reads and writes, of ap_fixed and ap_int
    "ap_fixed_base::range(int, int) const": ("U", "QU", "B"),
    "ap_int_base::range(int, int) const": ("U", "QU", "B"),
    "ap_detail::range_ref::range_ref(ap_fixed_base*, int, int)": ("U", "QU", "B"),
    "ap_detail::range_ref::range_ref(ap_int_base*, int, int)": ("U", "QU", "B"),
    "ap_detail::range_ref::to_uint64() const": ("U", "QU", "A", "QA"),
    "ap_detail::range_ref::length() const": ("QU",),
    "ap_detail::range_ref::operator=(unsigned long long)": ("B", "QU", "A", "QA"),
    "ap_detail::range_ref::operator=(ap_detail::range_ref const&)": ("QU", "wide"),
    # ports of many lanes: TDATA wider than 64 bits
    "ap_int_wide::range(int, int) const": ("wide",),
    "ap_detail::range_ref::range_ref(ap_int_wide*, int, int)": ("wide",),
    # streams of elements, of tokens of lanes and of AXI4-Stream packets
    "hls::stream::stream(char const*)": ("S", "QS"),
    "hls::stream::~stream()": ("S", "QS"),
    "hls::stream::read()": ("S", "X", "QS"),
    "hls::stream::write(ap_fixed_base const&)": ("S", "QS"),
    "hls::stream::write(float const&)": ("S",),
    "hls::stream::write(hlsf::lanes const&)": ("QS",),
    "hls::stream::write(hls::axis const&)": ("X", "QS"),
    "hls::stream::empty() const": ("S", "QS"),
    "hls::stream::size() const": ("S", "QS"),
}

_API_CLASSES = ("ap_fixed_base::", "ap_int_base::", "ap_int_wide::", "ap_detail::range_ref::", "ap_detail::bit_ref::",
                "hls::stream::")
# members of those classes that are the headers' own workings, not API
_PRIVATE = {"set", "set_bits", "aligned", "compare", "trunc_bits", "shifted", "logic", "word_at", "bits_at", "load",
            "store", "take", "normalize", "put", "word", "next_default_name"}


def _without_templates(name: str) -> str:
    """A demangled name without its template argument lists (a `<` inside parentheses is a comparison)."""
    def kind(m):  # ap_int_base<W, S, W > 64>, the third argument printed as a value or as an expression
        return "ap_int_wide<>" if int(m[1]) > 64 else "ap_int_base<>"

    name = re.sub(r"ap_int_base<(\d+), (?:true|false), (?:true|false|\(\(\d+\)>\(\d+\)\))>", kind, name)
    name = name.replace("ap_int_wide<>::ap_int_base(", "ap_int_wide<>::ap_int_wide(")
    out, depth, paren, i = [], 0, 0, 0
    while i < len(name):
        op = re.match(r"operator(<<=|>>=|<<|>>|<=|>=|<|>|->)", name[i:])
        if op and depth == 0:
            out.append(op[0])
            i += len(op[0])
            continue
        c = name[i]
        if depth and c in "()":
            paren += 1 if c == "(" else -1
        elif c == "<" and not paren:
            depth += 1
        elif c == ">" and not paren:
            depth -= 1
        elif depth == 0:
            out.append(c)
        i += 1
    return "".join(out)


def api_entry(symbol: str) -> str | None:
    """The API entry of a demangled function symbol: ``Class::member(params)[ const]`` or ``operator@(params)``,
    without template arguments or return type; None for anything else."""
    name = _without_templates(symbol)
    name = re.sub(r"^decltype \(.*?\) (?=\S+::operator)", "", name)  # a trailing return type, printed first
    const = name.endswith(" const")
    body = name[:-6] if const else name
    if not body.endswith(")"):
        return None
    depth = 0
    for k in range(len(body) - 1, -1, -1):  # the parameter list: the last parenthesized group
        depth += {")": 1, "(": -1}.get(body[k], 0)
        if depth == 0:
            break
    head, params = body[:k], body[k + 1:-1]
    m = re.search(r"(\S*operator\S*)\s*$", head) or re.search(r"(\S+)$", head)
    if m is None:
        return None
    function = m[1]
    member = function.startswith(_API_CLASSES) and function.split("::")[-1] not in _PRIVATE
    free = function.startswith("operator") and re.search(r"\bap_|hls::", params)
    if not (member or free) or "raw_tag" in params:
        return None
    return f"{function}({params}){' const' if const else ''}"


def inventory_designs():
    """(name, graph, options) of designs that together instantiate every stage template branch and kernel."""
    import test_lanes as lanes
    import test_lut_replicas as replicas
    import test_narrow as narrow
    import test_packed as packed
    import test_wide_ports as wide
    from map_graphs import awkward_names, fixed_zoo, float_zoo
    from nn_graphs import nn_zoo
    from norm_graphs import NORM_FOLD, fixed_norms, float_norms
    from own_graphs import hls_floats, hls_movers, hls_rows
    from union import union, union_fold

    from hlsfuse import load_graph
    from hlsfuse.boards import Target, target_of
    from hlsfuse.compile import CompileOptions
    from hlsfuse.lower.fold import Folding

    examples = Path(__file__).parent.parent / "examples"
    return [
        ("zoo", union([fixed_zoo(), float_zoo(), awkward_names()], "zoo", keep_names=(2,)), CompileOptions()),
        ("nn_fixed", nn_zoo(True), CompileOptions()),
        ("nn_float", nn_zoo(False), CompileOptions()),
        ("movers", hls_movers(), CompileOptions()),
        ("rows", hls_rows(), CompileOptions()),
        ("floats", hls_floats(), CompileOptions()),
        ("replicas", replicas.every_kind(),
         CompileOptions(fold=Folding(lanes=(("sg", 8), ("th", 4), ("ad", 8), ("sg2", 8), ("sm", 4), ("tot", 4))))),
        ("convs", lanes.convs(), CompileOptions(fold=lanes.WIDE)),
        ("wide", wide.wide_graph(), CompileOptions(fold=Folding(ports=wide.PORTS))),
        ("residual", load_graph(examples / "residual.json"), CompileOptions(device=Target(dsp=9))),  # SIMD, lanes
        ("norms", union(norms := [fixed_norms(), float_norms()], "norms"),
         CompileOptions(fold=union_fold(norms, [NORM_FOLD, Folding()]))),
        ("narrow", narrow.narrow_graph(), CompileOptions(fold=narrow.FOLD)),  # products without multipliers
        ("packed", packed.packed_graph(), CompileOptions(fold=Folding(  # two products to a DSP48E1
            simd=tuple((k, v["simd"]) for k, v in packed.FOLDS[packed.E1].items()),
            pe=tuple((k, v["pe"]) for k, v in packed.FOLDS[packed.E1].items()),
            multipliers=tuple((k, "packed") for k in packed.FOLDS[packed.E1])), device=target_of(None, packed.E1))),
    ]


def _symbols(obj: Path) -> list[str]:
    done = subprocess.run(["nm", "-C", "--defined-only", str(obj)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [line.split(" ", 2)[2] for line in done.stdout.splitlines() if line.count(" ") >= 2]


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    """The symbols of the inventory builds: every design's .cpp (also in its synthesis form), the testbenches of
    fixed-point, float32 and wide ports, and the kernel check program."""
    import dataclasses
    from concurrent.futures import ThreadPoolExecutor

    import test_hls_kernels as kernels

    from hlsfuse.compile import compile

    root = tmp_path_factory.mktemp("inventory")
    flags = ["g++", "-std=c++14", "-O0", "-fno-inline", "-w", "-c"]
    jobs = []
    for name, graph, options in inventory_designs():
        hls = compile(graph, dataclasses.replace(options, weights_file=True)).write(root / name) / "hls"
        top = next(hls.glob("tb_*.cpp")).name[3:-4]
        jobs.append((hls, [*flags, "-Iinclude", f"{top}.cpp", "-o", f"{top}.o"]))
        if name in ("zoo", "wide"):  # testbenches: fixed-point, float32 and wide ports
            jobs.append((hls, [*flags, "-Iinclude", f"tb_{top}.cpp", "-o", f"tb_{top}.o"]))
        # the ROMs' and tables' synthesis form, ap_int/ap_uint words (numeric.h's hlsf::raw)
        jobs.append((hls, [*flags, "-DHLSFUSE_AP_ROMS", "-Iinclude", f"{top}.cpp", "-o", f"{top}.synthesis.o"]))
    (root / "cases.inc").write_text(kernels.cases_inc(kernels.CASES))
    jobs.append((root, [*flags, "-I", str(INCLUDE), "-I", str(KERNELS_ROOT), "-iquote", str(root),
                        str(kernels.CHECK_CPP), "-o", "kernels.o"]))

    def build(job):
        folder, cmd = job
        done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return _symbols(folder / cmd[-1])

    with ThreadPoolExecutor(max_workers=2) as pool:
        return [symbol for symbols in pool.map(build, jobs) for symbol in symbols]


def test_every_api_generated_code_uses_is_covered_by_both_header_sets(inventory, ours):
    used = {entry for entry in map(api_entry, inventory) if entry}
    missing = sorted(used - set(COVERAGE))
    assert not missing, f"used by generated code or kernels, but no differential case covers it: {missing}"
    stale = sorted(set(COVERAGE) - used)
    assert not stale, f"COVERAGE lists what nothing uses any more: {stale}"
    printed = {tag for tag, _ in ours[2]} | {"wide"}
    assert {tag for tags in COVERAGE.values() for tag in tags} <= printed


def test_every_kernel_is_in_the_inventory(inventory):
    """Each function the kernel library defines is instantiated by an inventory build, so the API it uses is listed."""
    defined = set()
    for header in sorted((KERNELS_ROOT / "hlsfuse").glob("*.h")):
        for m in re.finditer(r"^(?:[\w:<>,]+[ &*]+)+(\w+)\(", header.read_text(), re.MULTILINE):
            defined.add(m[1])
    compile_time = {"ceil_log2", "gcd", "extent_sum", "int_sum", "format_of", "fixed_of", "decltype"}
    instantiated = {m[1] for symbol in inventory for m in re.finditer(r"hlsf::(?:\w+::)*(\w+)", symbol)}
    assert not sorted(defined - compile_time - instantiated), "kernels no inventory design instantiates"
