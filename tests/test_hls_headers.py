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
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hls_support import INCLUDE, STRICT, amd_cache, amd_headers, amd_include_flags

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
    return "void run_cases() {\n" + "\n".join(calls) + "\n}\n"


def expected_keys(with_defaults: bool) -> set[tuple[str, int]]:
    """The lines the program prints: one per tag and case, the stream and axis lines, and "Z" (defaults),
    which only hlsfuse's headers print."""
    keys = {(tag, n) for tags, cases in CHECKS.values() for tag in tags for n in range(len(cases))}
    keys |= {("S", 0), ("X", 0)}
    if with_defaults:
        keys.add(("Z", 0))
    return keys


# --------------------------------------------------------------------------
# Building and running
# --------------------------------------------------------------------------


def build(workdir: Path, include_flags: list[str], flags: list[str]) -> tuple[Path, str]:
    """Compile the check program; returns the binary and g++'s diagnostics."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "values.inc").write_text(values_inc())
    (workdir / "cases.inc").write_text(cases_inc())
    binary = workdir / "check"
    cmd = ["g++", *flags, *include_flags, "-iquote", str(workdir), str(CHECK_CPP), "-o", str(binary)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"g++ failed:\n{done.stderr[-6000:]}"
    return binary, done.stderr


def run(binary: Path) -> dict[tuple[str, int], list[int]]:
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and not done.stderr, done.stderr
    lines = {}
    for line in done.stdout.splitlines():
        tag, ident, *values = line.split()
        lines[(tag, int(ident))] = [int(v, 16) for v in values]
    return lines


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    binary, diagnostics = build(tmp_path_factory.mktemp("ours"), ["-I", str(INCLUDE)], STRICT)
    return binary, diagnostics, run(binary)


@pytest.fixture(scope="module")
def amd(tmp_path_factory):
    headers = amd_headers(amd_cache())
    # Without -Werror (AMD's headers are not warning-free). NDEBUG: AMD's assignment reads a bit beyond
    # the source's MSB (an assert) when every source bit lies below the target's LSB, before choosing the
    # sign bit instead; -O0 because these headers compile slowly.
    include = amd_include_flags(headers)
    binary, _ = build(tmp_path_factory.mktemp("amd"), include, ["-std=c++14", "-O0", "-w", "-DNDEBUG"])
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


def test_default_construction_is_zero(ours):
    assert ours[2][("Z", 0)] == [0, 0, 0, 0]


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
    2. Converting an ap_fixed with I < 0 to an integer (ap_int assignment, to_int() and friends) reads
       an uninitialized value: AMD's to_ap_int_base() has no branch for I < 0 (the value is 0).
    3. AP_SAT_SYM on a 1-bit signed type acts as AP_SAT, giving -1 where the rounded value is negative:
       AMD sets the sign bit and then bit 0 for "min + 1", and both are the same bit. DESIGN.md section 3
       clips to [-hi, hi] = [0, 0].
    hlsfuse's headers follow DESIGN.md section 3 in all three; every other value must be identical.
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
            if (dst.is_int and src.int_bits < 0 and not src.is_int) or negative[k]:
                defects.add(("A", n, k))
    for n, t in enumerate(REALS):
        sat = as_sat(t)
        for tag, values in (("D", DOUBLES), ("F", FLOATS), ("I", INTS + LONGS + UNSIGNEDS)):
            for k, v in enumerate(values):
                negative = sat is not None and (from_float(np.array([v]), sat)[0] < 0)
                if (t.is_int and -0.5 < v < 0) or negative:
                    defects.add((tag, n, k))
    for n, a in enumerate(UNARY):
        if a.int_bits < 0 and not a.is_int:
            for k, (what, _) in enumerate(unary_expected(a)):
                if what.startswith("to_") and "int" in what:
                    defects.add(("U", n, k))
    return defects


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
