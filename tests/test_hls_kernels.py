"""hlsfuse's HLS kernel library (hw/hls/hlsfuse) against the numpy reference, bit for bit.

Every case builds a one-node graph with GraphBuilder, runs it with ``reference.run_raw`` and drives the
matching kernel (or a stage composed of the library's blocks, in tests/cxx/kernels_check.cpp: the line
buffer's push/snapshot with the harness's own padding/emit/real-tap geometry and the MAC helpers) through
hls::stream (or an hlsf::rom_reader) with the same raw inputs; fixed-point outputs must be identical,
float32 ones close. The own and opaque stages get their buffers and iteration counts from the case, as a
generated stage function would declare them.
All cases are compiled into one program (g++ -Wall -Wextra -Werror against the work-alike headers), and once
more against AMD's headers (hls4ml's copy), which must give the same values.
A last g++ run checks that misuse of the blocks (wrong buffer, weight or iteration counts, ranks) stops at
compile time with a clear message.
"""

from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hls_support import INCLUDE, KERNELS_ROOT, STRICT, amd_cache, amd_headers, amd_include_flags, built

from hlsfuse import GraphBuilder
from hlsfuse.backends.hls.toolchain import AMD_FLAGS, CXX_STANDARD
from hlsfuse.lut import make_table
from hlsfuse.ops.nn import pool_counts
from hlsfuse.ops.opaque import softmax_tables
from hlsfuse.reference import run_raw
from hlsfuse.types import OVERFLOW_MODES, QUANT_MODES, FixedType, Fmt, assign_quotient, from_float, parse_dtype

pytestmark = pytest.mark.gxx

CHECK_CPP = Path(__file__).parent / "cxx" / "kernels_check.cpp"
# g++ warns about every `#pragma HLS` under -Wall and no pragma in a header can silence that (GCC bug 53431)
OURS_FLAGS = [*STRICT, "-Wno-unknown-pragmas"]


# --------------------------------------------------------------------------
# C++ spellings
# --------------------------------------------------------------------------


def ctype(t) -> str:
    if t.is_float:
        return "float"
    base = "ap_fixed" if t.signed else "ap_ufixed"
    modes = "" if (t.quant, t.overflow) == ("TRN", "WRAP") else f", AP_{t.quant}, AP_{t.overflow}"
    return f"{base}<{t.width}, {t.int_bits}{modes}>"


def fmt_type(f: Fmt) -> str:
    return f"{'ap_fixed' if f.signed else 'ap_ufixed'}<{f.width}, {f.int_bits}>"


def dims(values) -> str:
    return f"hlsf::dims<{', '.join(str(int(v)) for v in values)}>"


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    body: str  # C++ statements of case_<n>(); `ID` is the case number
    data: tuple[np.ndarray, ...]  # the values the body reads, in order
    expected: np.ndarray  # raw int64 values, or float32 values
    is_float: bool = False


def random_raw(t, shape, rng, low=None, high=None) -> np.ndarray:
    """Raw values of type t, every one equally likely (or those within [low, high]). float32: standard normal,
    or whole numbers within [low, high] (many ties)."""
    if t.is_float:
        if low is None:
            return rng.standard_normal(shape).astype(np.float32)
        return rng.integers(low, high, size=shape, endpoint=True).astype(np.float32)
    low = t.raw_min if low is None else max(low, t.raw_min)
    high = t.raw_max if high is None else min(high, t.raw_max)
    return rng.integers(low, high, size=shape, endpoint=True, dtype=np.int64)


def constant(b: GraphBuilder, name: str, shape, dtype: str, rng) -> str:
    """A constant whose raw values are uniform over its type (exact through its real values)."""
    t = parse_dtype(dtype)
    raw = random_raw(t, shape, rng)
    values = raw if t.is_float else np.ldexp(raw.astype(np.float64), -t.frac)
    return b.constant(name, values, dtype=dtype)


def evaluate(b: GraphBuilder, y: str, inputs: dict[str, np.ndarray]):
    """Build the graph, run the reference; returns (graph, raw output)."""
    b.output(y)
    g = b.build()
    return g, run_raw(g, inputs)[y]


def stream_case(name, x_type, x_raw, out_type, call, expected, extra_data=(), rom=False) -> Case:
    """A single-input stage: feed x, run ``call`` (a C++ statement on `in` and the stream `out`), drain out.
    `in` is an hls::stream, or with ``rom`` an hlsf::rom_reader over a ROM holding x."""
    X = ctype(x_type)
    if rom:
        source = [f"  static {X} rom[{x_raw.size}];", "  load(rom);", f"  hlsf::rom_reader<{X}, {x_raw.size}> in(rom);"]
    else:
        source = [f"  hls::stream<{X} > in(\"in\");", f"  feed(in, {x_raw.size});"]
    body = "\n".join([
        *source,
        f"  hls::stream<{ctype(out_type)} > out(\"out\");",
        f"  {call}",
        "  drain(ID, out);",
    ])
    return Case(name, body, (x_raw.ravel(), *extra_data), expected, out_type.is_float)


def conv2d_case(name, rng, x_shape, kernel, cout, x="fixed<8,3>", w="fixed<8,1>", out=None, simd=None,
                **attrs) -> Case:
    n, h, wd, c = x_shape
    groups = attrs.get("groups", 1)
    (kh, kw), (sh, sw) = kernel, attrs.get("strides", [1, 1])
    (pt, pl, pb, pr), (dh, dw) = attrs.get("padding", [0, 0, 0, 0]), attrs.get("dilation", [1, 1])
    b = GraphBuilder("k", dtype=x)
    wc = constant(b, "w", (kh, kw, c // groups, cout), w, rng)
    y = b.conv2d(b.input("x", x_shape), wc, dtype=out, **attrs)
    xt, wt = parse_dtype(x), parse_dtype(w)
    x_raw = random_raw(xt, x_shape, rng)
    g, expected = evaluate(b, y, {"x": x_raw})
    terms = kh * kw * (c // groups)
    acc = "double" if xt.is_float else fmt_type(Fmt.of(xt).mul(Fmt.of(wt)).accumulate(terms))
    geometry = f"geometry<{h}, {wd}, {kh}, {kw}, {sh}, {sw}, {pt}, {pl}, {pb}, {pr}, {dh}, {dw}>"
    w_raw = g.constants[0].data.ravel()
    X, W, OUT_T = ctype(xt), ctype(wt), ctype(g.types[y].dtype)
    body = "\n".join([
        f"  typedef {geometry} G;",
        f"  typedef {acc} ACC;",
        f"  static_assert(std::is_same<ACC, hlsf::sum_t<hlsf::product_t<{X}, {W} >, {terms}> >::value, \"ACC\");",
        f"  hls::stream<{X} > in(\"in\");",
        f"  feed(in, {x_raw.size});",
        f"  static {W} w[{w_raw.size}];",
        "  load(w);",
        f"  hls::stream<{OUT_T} > out(\"out\");",
        f"  conv2d_stage<{X}, {OUT_T}, ACC, {n}, {c}, {cout}, {groups}, {simd or terms}, G>(in, out, w);",
        "  drain(ID, out);",
    ])
    return Case(name, body, (x_raw.ravel(), w_raw), expected, xt.is_float)


def pool_case(name, rng, op, x_shape, pool, x="fixed<8,3>", out=None, low=None, high=None, **attrs) -> list[Case]:
    """A max_pool2d or avg_pool2d stage, and for avg_pool2d also the divisors the harness's real-tap mask
    gives (the mask max_pool2d passes to window_max)."""
    n, h, wd, c = x_shape
    (kh, kw), (sh, sw) = pool, attrs.get("strides", pool)
    pt, pl, pb, pr = attrs.get("padding", [0, 0, 0, 0])
    b = GraphBuilder("k", dtype=x)
    y = b.op(op, b.input("x", x_shape), pool_size=pool, dtype=out, **attrs)
    xt = parse_dtype(x)
    x_raw = random_raw(xt, x_shape, rng, low, high)
    g, expected = evaluate(b, y, {"x": x_raw})
    out_t = g.types[y].dtype
    X, OUT_T = ctype(xt), ctype(out_t)
    geometry = f"geometry<{h}, {wd}, {kh}, {kw}, {sh}, {sw}, {pt}, {pl}, {pb}, {pr}>"
    if op == "max_pool2d":
        call = f"max_pool2d_stage<{X}, {OUT_T}, {n}, {c}, {geometry} >(in, out);"
        return [stream_case(name, xt, x_raw, out_t, call, expected)]
    acc = "double" if xt.is_float else fmt_type(Fmt.of(xt).accumulate(kh * kw))
    include_pad = "true" if attrs.get("count_include_pad", False) else "false"
    call = (f"static_assert(std::is_same<{acc}, hlsf::sum_t<{X}, {kh * kw}> >::value, \"ACC\"); "
            f"avg_pool2d_stage<{X}, {OUT_T}, {acc}, {n}, {c}, {geometry}, {include_pad}>(in, out);")
    # the real-tap count is the divisor of count_include_pad=False
    b = GraphBuilder("k", dtype=x)
    y = b.op(op, b.input("x", x_shape), pool_size=pool, **{**attrs, "count_include_pad": False})
    b.output(y)
    counts = Case(f"{name}_counts", f"  pool_counts<{geometry} >(ID);", (), pool_counts(b.build().sigs[y]).ravel())
    return [stream_case(name, xt, x_raw, out_t, call, expected), counts]


def dense_case(name, rng, x_shape, units, x="fixed<8,3>", w="fixed<8,1>", out=None, simd=None) -> Case:
    k = x_shape[-1]
    b = GraphBuilder("k", dtype=x)
    wc = constant(b, "w", (units, k), w, rng)
    y = b.dense(b.input("x", x_shape), wc, dtype=out)
    xt, wt = parse_dtype(x), parse_dtype(w)
    x_raw = random_raw(xt, x_shape, rng)
    g, expected = evaluate(b, y, {"x": x_raw})
    acc = "double" if xt.is_float else fmt_type(Fmt.of(xt).mul(Fmt.of(wt)).accumulate(k))
    w_raw = g.constants[0].data.ravel()
    X, W, OUT_T = ctype(xt), ctype(wt), ctype(g.types[y].dtype)
    rows = math.prod(x_shape[:-1])
    call = (f"static {W} w[{w_raw.size}]; load(w); "
            f"dense_stage<{X}, {OUT_T}, {acc}, {rows}, {k}, {units}, {simd or k}>(in, out, w);")
    return stream_case(name, xt, x_raw, g.types[y].dtype, call, expected, (w_raw,))


def matmul_case(name, rng, a_shape, b_shape, x="fixed<8,3>", w="fixed<8,1>", out=None, simd=None) -> Case:
    """a [BATCH, M, K] (a stream) @ b [K, N] or [BATCH, K, N] (a constant)."""
    batch, m, k = a_shape
    b = GraphBuilder("k", dtype=x)
    bc = constant(b, "b", b_shape, w, rng)
    y = b.matmul(b.input("a", a_shape), bc, dtype=out)
    xt, wt = parse_dtype(x), parse_dtype(w)
    x_raw = random_raw(xt, a_shape, rng)
    g, expected = evaluate(b, y, {"a": x_raw})
    acc = "double" if xt.is_float else fmt_type(Fmt.of(xt).mul(Fmt.of(wt)).accumulate(k))
    b_raw = g.constants[0].data.ravel()
    X, W, OUT_T = ctype(xt), ctype(wt), ctype(g.types[y].dtype)
    n, b_batch = b_shape[-1], (b_shape[0] if len(b_shape) == 3 else 1)
    call = (f"static {W} b[{b_raw.size}]; load(b); "
            f"matmul_stage<{X}, {OUT_T}, {acc}, {batch}, {m}, {k}, {n}, {b_batch}, {simd or k}>(in, out, b);")
    return stream_case(name, xt, x_raw, g.types[y].dtype, call, expected, (b_raw,))


def softmax_case(name, rng, shape, x="fixed<8,3>", out=None, **attrs) -> Case:
    b = GraphBuilder("k", dtype=x)
    y = b.softmax(b.input("x", shape), dtype=out, **attrs)
    xt = parse_dtype(x)
    x_raw = random_raw(xt, shape, rng)
    g, expected = evaluate(b, y, {"x": x_raw})
    out_t = g.types[y].dtype
    rows, n = math.prod(shape[:-1]), shape[-1]
    if xt.is_float:
        call = f"static float x[{n}]; hlsf::softmax_float_stage<{rows}, {n}>(in, out, x);"
        return stream_case(name, xt, x_raw, out_t, call, expected)
    exp, recip, _ = softmax_tables(g.sigs[y])
    X, E, R = ctype(xt), ctype(exp.out_type), ctype(recip.out_type)
    call = (f"static {E} et[{exp.entries.size}]; load(et); static {R} rt[{recip.entries.size}]; load(rt); "
            f"static {X} x[{n}]; static {E} e[{n}]; "
            f"hlsf::softmax_stage<{X}, {ctype(out_t)}, {E}, {R}, {rows}, {n}>(in, out, et, rt, x, e);")
    return stream_case(name, xt, x_raw, out_t, call, expected, (exp.entries, recip.entries))


def argmax_case(name, rng, shape, axis, x="fixed<8,3>", low=-3, high=3, rom=False, **attrs) -> Case:
    b = GraphBuilder("k", dtype=x)
    y = b.argmax(b.input("x", shape), axis=axis, **attrs)
    xt = parse_dtype(x)
    x_raw = random_raw(xt, shape, rng, low, high)
    g, expected = evaluate(b, y, {"x": x_raw})
    a = axis % len(shape)
    outer, inner = math.prod(shape[:a]), math.prod(shape[a + 1:])
    out_t = g.types[y].dtype
    call = (f"static {ctype(xt)} best[{inner}]; static int where[{inner}]; "
            f"hlsf::argmax_stage<{ctype(xt)}, {ctype(out_t)}, {outer}, {shape[a]}, {inner}>(in, out, best, where);")
    return stream_case(name, xt, x_raw, out_t, call, expected, rom=rom)


def topk_case(name, rng, shape, k, ret, x="fixed<8,3>", low=-4, high=4) -> Case:
    b = GraphBuilder("k", dtype=x)
    y = b.topk(b.input("x", shape), k=k, ret=ret)
    xt = parse_dtype(x)
    x_raw = random_raw(xt, shape, rng, low, high)
    g, expected = evaluate(b, y, {"x": x_raw})
    out_t = g.types[y].dtype
    rows, n = math.prod(shape[:-1]), shape[-1]
    indices = "true" if ret == "indices" else "false"
    call = f"hlsf::topk_stage<{ctype(xt)}, {ctype(out_t)}, {rows}, {n}, {k}, {indices}>(in, out);"
    return stream_case(name, xt, x_raw, out_t, call, expected)


def slice_case(name, rng, shape, begin, end, step=None, x="fixed<8,3>", out=None, rom=False) -> Case:
    """slice_stage when it streams, else slice_block_stage from the first axis read backwards (a negative
    step and more than one output element)."""
    b = GraphBuilder("k", dtype=x)
    y = b.slice(b.input("x", shape), begin=begin, end=end, step=step, dtype=out)
    xt = parse_dtype(x)
    x_raw = random_raw(xt, shape, rng)
    g, expected = evaluate(b, y, {"x": x_raw})
    steps = step or [1] * len(begin)
    starts = [slice(*p).indices(d)[0] for p, d in zip(zip(begin, end, steps), shape)] + [0] * (len(shape) - len(begin))
    steps = list(steps) + [1] * (len(shape) - len(begin))
    out_t, out_shape = g.types[y].dtype, g.types[y].shape
    params = f"{ctype(xt)}, {ctype(out_t)}, {dims(shape)}, {dims(out_shape)}, {dims(starts)}, {dims(steps)}"
    reversed_axes = [d for d, (s, o) in enumerate(zip(steps, out_shape)) if s < 0 and o > 1]
    if not reversed_axes:
        call = f"hlsf::slice_stage<{params}, {math.prod(shape)}>(in, out);"
    else:
        # per outer index (axes before B) read the block of axes B..; per picked outer index (every axis
        # before B picks its coordinate: prod(out_shape[:B]) of them) also write its picked elements
        bb = reversed_axes[0]
        block = math.prod(shape[bb:])
        iterations = math.prod(shape[:bb]) * block + math.prod(out_shape[:bb]) * math.prod(out_shape[bb:])
        call = (f"static {ctype(xt)} block[{block}]; "
                f"hlsf::slice_block_stage<{params}, {bb}, {iterations}>(in, out, block);")
    return stream_case(name, xt, x_raw, out_t, call, expected, rom=rom)


def pad_case(name, rng, shape, pads, value=0.0, x="fixed<8,3>", out=None, rom=False) -> Case:
    b = GraphBuilder("k", dtype=x)
    y = b.pad(b.input("x", shape), pads=pads, value=value, dtype=out)
    xt = parse_dtype(x)
    x_raw = random_raw(xt, shape, rng)
    g, expected = evaluate(b, y, {"x": x_raw})
    out_t = g.types[y].dtype
    if out_t.is_float:
        fill = f"static_cast<float>({float(np.float32(value))!r})"  # the float32 value, exactly
    else:
        sat = FixedType(out_t.width, out_t.int_bits, out_t.signed, "RND", "SAT")
        fill = f"hlsf::from_raw<{ctype(out_t)} >({int(from_float(value, sat))}LL)"
    call = (f"hlsf::pad_stage<{ctype(xt)}, {ctype(out_t)}, {dims(shape)}, {dims(pads[:len(shape)])}, "
            f"{dims(g.types[y].shape)} >(in, out, {fill});")
    return stream_case(name, xt, x_raw, out_t, call, expected, rom=rom)


def concat_case(name, rng, shapes, axis, types, out=None) -> Case:
    b = GraphBuilder("k")
    names = [b.input(f"x{i}", s, dtype=t) for i, (s, t) in enumerate(zip(shapes, types))]
    y = b.concat(*names, axis=axis, dtype=out)
    ts = [parse_dtype(t) for t in types]
    raws = [random_raw(t, s, rng) for t, s in zip(ts, shapes)]
    g, expected = evaluate(b, y, dict(zip(names, raws)))
    out_t = g.types[y].dtype
    a = axis % len(shapes[0])
    outer, inner = math.prod(shapes[0][:a]), math.prod(shapes[0][a + 1:])
    lines = []
    for i, (t, r) in enumerate(zip(ts, raws)):
        lines += [f"  hls::stream<{ctype(t)} > in{i}(\"in{i}\");", f"  feed(in{i}, {r.size});"]
    extents = ", ".join(str(s[a]) for s in shapes)
    streams = ", ".join(f"in{i}" for i in range(len(shapes)))
    lines += [f"  hls::stream<{ctype(out_t)} > out(\"out\");",
              f"  hlsf::concat_stage<{ctype(out_t)}, {outer}, {inner}, {extents}>(out, {streams});",
              "  drain(ID, out);"]
    return Case(name, "\n".join(lines), tuple(r.ravel() for r in raws), expected, out_t.is_float)


def transpose_case(name, rng, shape, axes=None, x="fixed<8,3>", out=None, rom=False) -> Case:
    """transpose_stage split at the first moved axis: OUTER blocks of the axes from there on (OUTER = 1 and
    the whole tensor when axis 0 moves)."""
    b = GraphBuilder("k", dtype=x)
    y = b.transpose(b.input("x", shape), axes=axes, dtype=out)
    xt = parse_dtype(x)
    x_raw = random_raw(xt, shape, rng)
    g, expected = evaluate(b, y, {"x": x_raw})
    perm = list(axes) if axes is not None else list(reversed(range(len(shape))))
    first = next((d for d, p in enumerate(perm) if p != d), 0)
    outer, inner_shape, inner_perm = math.prod(shape[:first]), shape[first:], [p - first for p in perm[first:]]
    out_t = g.types[y].dtype
    call = (f"static {ctype(xt)} block[{math.prod(inner_shape)}]; "
            f"hlsf::transpose_stage<{ctype(xt)}, {ctype(out_t)}, {outer}, {dims(inner_shape)}, {dims(inner_perm)} >"
            "(in, out, block);")
    return stream_case(name, xt, x_raw, out_t, call, expected, rom=rom)


# assign_quotient: accumulator and output formats covering k > 0, k = 0, k < 0 and k <= -64 (k = F_out - F_acc
# + 1), unsigned accumulators, an output with negative fractional bits, and the 64-bit dividend limits
# (signed 64 and unsigned 63 bits, where 2 * q2 + r needs the n >= 2 argument).
QUOTIENT_FORMATS = (
    (FixedType(12, 4), (6, 3, True)),
    (FixedType(10, 8), (6, 3, True)),
    (FixedType(9, 5, False), (5, 1, False)),
    (FixedType(12, 6), (8, 12, True)),
    (FixedType(16, -60), (7, 4, True)),
    (FixedType(64, 61), (6, 4, True)),
    (FixedType(63, 60, False), (7, 5, False)),
    (FixedType(20, 10), (40, 2, True)),
)


def quotient_cases(rng) -> list[Case]:
    cases = []
    for f, (acc, (w, i, signed)) in enumerate(QUOTIENT_FORMATS):
        edges = [acc.raw_min, acc.raw_max, acc.raw_min + 1, acc.raw_max - 1, 0, 1, -1, 2, -2, 3, 7, -7]
        raw = np.array([e for e in edges if acc.raw_min <= e <= acc.raw_max], dtype=np.int64)
        raw = np.concatenate([raw, random_raw(acc, 40, rng), random_raw(acc, 20, rng, -300, 300)])
        n = rng.integers(1, 13, size=raw.size, dtype=np.int64)
        n[:12] = [1, 2, 3, 1, 2, 3, 4, 5, 6, 7, 9, 2]  # the extremes divided by 1 (exact), 2 and 3
        pairs = np.stack([raw, n], axis=1).ravel()
        for q in QUANT_MODES:
            for o in OVERFLOW_MODES:
                t = FixedType(w, i, signed, q, o)
                Fmt.of(acc).dividend(t).check("test case dividend")
                expected = assign_quotient(raw, acc.frac, n, t)
                body = f"  quotients<{ctype(acc)}, {ctype(t)} >(ID, {raw.size});"
                cases.append(Case(f"quotient{f}_{q}_{o}", body, (pairs,), expected))
    return cases


def lut_cases(rng) -> list[Case]:
    cases = []
    for t, bits in ((FixedType(9, 4), 10), (FixedType(9, 4), 6), (FixedType(7, 3, False), 4), (FixedType(20, 5), 10),
                    (FixedType(1, 1), 1), (FixedType(63, 10, False), 16)):
        table = make_table("exp", Fmt.of(t), FixedType(18, 1, False, "RND", "SAT"), bits)
        raw = np.concatenate([[t.raw_min, t.raw_max, 0], random_raw(t, 30, rng)]).astype(np.int64)
        expected = np.array([(int(r) - table.in_min) >> table.shift for r in raw], dtype=np.int64)
        body = f"  lut_indices<{ctype(t)}, {table.shift}>(ID, {raw.size});"
        cases.append(Case(f"lut_{t}_{bits}".replace("<", "").replace(">", "").replace(",", "_"), body, (raw,),
                          expected))
    return cases


def window_sweep(rng, count: int) -> list[Case]:
    """Random geometries (sizes, kernels, strides, dilations, asymmetric padding, groups) for conv2d and the
    pools; invalid draws are redrawn."""
    cases = []
    while len(cases) < count:
        h, w, kh, kw = (int(v) for v in rng.integers(1, 7, 4))
        strides, dilation = [int(v) for v in rng.integers(1, 4, 2)], [int(v) for v in rng.integers(1, 3, 2)]
        padding = [int(v) for v in rng.integers(0, 3, 4)]
        n = len(cases)
        if n % 2 == 0:
            groups = int(rng.integers(1, 3))
            c, cout = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
            spans = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
            if spans[0] > h + padding[0] + padding[2] or spans[1] > w + padding[1] + padding[3]:
                continue
            cases.append(conv2d_case(f"sweep{n}_conv", rng, (1, h, w, c), (kh, kw), cout, out="fixed<12,5,RND,SAT>",
                                     strides=strides, padding=padding, dilation=dilation, groups=groups))
        else:
            if max(padding[0], padding[2]) >= kh or max(padding[1], padding[3]) >= kw or kh > h or kw > w:
                continue
            op = "avg_pool2d" if n % 4 == 1 else "max_pool2d"
            extra = {"count_include_pad": bool(rng.integers(0, 2))} if op == "avg_pool2d" else {}
            cases += pool_case(f"sweep{n}_{op}", rng, op, (1, h, w, 2), (kh, kw), strides=strides, padding=padding,
                               out="fixed<9,3,RND_CONV,SAT>", **extra)[:1]
    return cases


def make_cases() -> list[Case]:
    rng = np.random.default_rng(2024)
    more = np.random.default_rng(2025)  # for the cases added with the matmul/rom_reader/block API (rng's draws stay)
    cases = [
        conv2d_case("conv_3x3_same", rng, (1, 5, 5, 3), (3, 3), 4, padding=[1, 1, 1, 1], out="fixed<16,6>"),
        conv2d_case("conv_stride_pad_dilation", rng, (1, 7, 6, 2), (3, 2), 3, strides=[2, 1],
                    padding=[0, 1, 2, 0], dilation=[2, 1], out="fixed<10,4,RND,SAT>"),
        conv2d_case("conv_groups", rng, (1, 4, 6, 4), (2, 3), 6, groups=2, strides=[1, 2], padding=[1, 0, 0, 1],
                    out="fixed<14,5,RND_CONV,SAT_SYM>"),
        conv2d_case("conv_depthwise", rng, (1, 6, 6, 3), (3, 3), 6, groups=3, padding=[2, 2, 2, 2],
                    dilation=[2, 2], out="fixed<12,4,RND_ZERO>"),
        conv2d_case("conv_1x1_batch_ints", rng, (2, 3, 4, 3), (1, 1), 2, x="uint8", w="int8", out="int32"),
        conv2d_case("conv_whole_image_64bit_acc", rng, (1, 3, 3, 1), (3, 3), 2, x="fixed<32,16>",
                    w="fixed<28,4>", out="fixed<20,12,RND,SAT>"),
        conv2d_case("conv_default_type_wraps", rng, (1, 4, 4, 2), (2, 2), 2, strides=[2, 2]),
        conv2d_case("conv_float", rng, (1, 5, 4, 2), (3, 3), 3, x="float32", w="float32", strides=[2, 1],
                    padding=[1, 1, 1, 1]),
        *pool_case("maxpool_3x3_s2_pad", rng, "max_pool2d", (1, 7, 6, 3), (3, 3), strides=[2, 2],
                   padding=[1, 1, 1, 1], out="fixed<6,2,RND,SAT>"),
        *pool_case("maxpool_negative_padding_never_wins", rng, "max_pool2d", (1, 4, 5, 2), (2, 3),
                   strides=[1, 2], padding=[1, 2, 1, 0], low=-128, high=-1),
        *pool_case("maxpool_float", rng, "max_pool2d", (1, 5, 5, 2), (2, 2), padding=[0, 0, 1, 1],
                   x="float32"),
        *pool_case("avgpool_exclude_pad", rng, "avg_pool2d", (1, 5, 6, 2), (3, 3), strides=[1, 1],
                   padding=[1, 1, 1, 1], out="fixed<8,3,RND,SAT>"),
        *pool_case("avgpool_include_pad", rng, "avg_pool2d", (1, 5, 4, 3), (2, 3), strides=[2, 1],
                   padding=[1, 0, 0, 2], count_include_pad=True, out="fixed<12,2,RND_CONV>"),
        *pool_case("avgpool_unsigned_trn_zero", rng, "avg_pool2d", (2, 4, 4, 1), (3, 2), strides=[1, 2],
                   padding=[2, 1, 0, 0], x="ufixed<8,4>", out="ufixed<6,3,TRN_ZERO,SAT>"),
        *pool_case("avgpool_default_types", rng, "avg_pool2d", (1, 6, 6, 2), (2, 2)),
        *pool_case("avgpool_float", rng, "avg_pool2d", (1, 5, 5, 2), (3, 3), strides=[2, 2],
                   padding=[1, 1, 1, 1], x="float32"),
        dense_case("dense", rng, (3, 10), 7, out="fixed<16,6>"),
        dense_case("dense_rank3_saturating", rng, (2, 2, 5), 4, x="fixed<10,5>", w="fixed<6,2>",
                   out="fixed<8,4,RND_INF,SAT>"),
        dense_case("dense_float", rng, (2, 6), 3, x="float32", w="float32"),
        matmul_case("matmul_shared_b", more, (2, 3, 5), (5, 4), out="fixed<16,6>"),
        matmul_case("matmul_batched_b_saturating", more, (3, 2, 4), (3, 4, 3), x="fixed<10,5>", w="fixed<6,2>",
                    out="fixed<8,4,RND,SAT>"),
        matmul_case("matmul_float", more, (2, 2, 3), (2, 3, 2), x="float32", w="float32"),
        # folded: each output over several calls of SIMD products
        conv2d_case("conv_groups_simd3", more, (1, 4, 6, 4), (2, 3), 6, groups=2, padding=[1, 0, 0, 1], simd=3,
                    out="fixed<16,6>"),
        conv2d_case("conv_depthwise_simd1", more, (1, 5, 5, 3), (3, 3), 3, groups=3, padding=[1, 1, 1, 1], simd=1,
                    out="fixed<16,6>"),
        conv2d_case("conv_float_simd2", more, (1, 4, 4, 2), (3, 3), 2, x="float32", w="float32", simd=2),
        dense_case("dense_simd5", more, (3, 10), 7, out="fixed<16,6>", simd=5),
        dense_case("dense_simd1", more, (2, 4), 3, out="fixed<16,6>", simd=1),
        matmul_case("matmul_batched_b_simd2", more, (3, 2, 4), (3, 4, 3), out="fixed<16,6>", simd=2),
        softmax_case("softmax", rng, (3, 7), out="fixed<16,2>"),
        softmax_case("softmax_small_tables", rng, (2, 3, 5), x="fixed<10,4>", out="fixed<12,1,RND,SAT>",
                     table_bits=8, exp_dtype="ufixed<12,2,RND,SAT>", recip_dtype="ufixed<16,1>"),
        softmax_case("softmax_unsigned_input", rng, (1, 9), x="ufixed<6,3>", out="ufixed<10,0,RND_CONV,SAT>"),
        softmax_case("softmax_float", rng, (2, 6), x="float32"),
        argmax_case("argmax_last_axis", rng, (4, 6), -1),
        argmax_case("argmax_middle_axis_keepdims", rng, (2, 5, 3), 1, keepdims=True),
        argmax_case("argmax_first_axis_float", rng, (5, 4), 0, x="float32"),
        argmax_case("argmax_from_rom", more, (3, 4, 2), 1, rom=True),
        topk_case("topk_values", rng, (3, 8), 3, "values"),
        topk_case("topk_indices_all", rng, (2, 8), 8, "indices"),
        topk_case("topk_one_float", rng, (3, 5), 1, "indices", x="float32"),
        topk_case("topk_values_ufixed", rng, (2, 6), 4, "values", x="ufixed<5,2>", low=0, high=5),
        slice_case("slice_steps", rng, (6, 5), [1, 0], [6, 5], [2, 2]),
        slice_case("slice_reversed_inner", rng, (3, 6, 2), [0, -1], [3, -7], [1, -2]),
        slice_case("slice_negative_step_single", rng, (4, 3, 5), [2, 0, 1], [1, 3, 5], [-1, 1, 2]),
        slice_case("slice_reversed_outer", rng, (4, 3, 5), [3, 2, 4], [-10, -10, 0], [-2, -1, -3]),
        slice_case("slice_one_axis_retyped", rng, (5, 4), [-4], [100], x="fixed<8,3>", out="fixed<6,2,RND,SAT>"),
        slice_case("slice_reversed_middle_from_rom", more, (3, 4, 2), [0, 3], [3, 0], [2, -1], rom=True),
        pad_case("pad_2d", rng, (2, 3), [1, 0, 2, 3], value=1.3),
        pad_case("pad_4d_saturating_value", rng, (1, 2, 3, 2), [0, 1, 0, 2, 0, 2, 1, 0], value=-100.0,
                 out="fixed<10,4,RND,SAT>"),
        pad_case("pad_float", rng, (3, 2), [0, 1, 2, 0], value=-0.7, x="float32"),
        pad_case("pad_from_rom", more, (2, 2, 3), [1, 0, 0, 0, 2, 1], value=0.5, rom=True),
        concat_case("concat_last_axis_mixed_types", rng, [(2, 3, 2), (2, 3, 1), (2, 3, 4)], -1,
                    ["fixed<8,3>", "ufixed<6,2>", "fixed<12,1>"], out="fixed<10,3,RND,SAT>"),
        concat_case("concat_middle_axis", rng, [(2, 2, 3), (2, 4, 3)], 1, ["fixed<8,3>", "fixed<8,3>"]),
        concat_case("concat_first_axis_four", rng, [(1, 3), (2, 3), (3, 3), (1, 3)], 0, ["int8"] * 4),
        concat_case("concat_eight", rng, [(2, k % 3 + 1) for k in range(8)], 1, ["fixed<8,3>"] * 8),
        concat_case("concat_one_float", rng, [(2, 3)], 0, ["float32"]),
        transpose_case("transpose_3d", rng, (2, 3, 4), [2, 0, 1]),
        transpose_case("transpose_rank6", rng, (2, 1, 3, 2, 1, 2), [5, 3, 1, 0, 2, 4]),
        transpose_case("transpose_default_retyped", rng, (3, 5), x="fixed<10,4>", out="fixed<6,2,RND_MIN_INF,SAT>"),
        transpose_case("transpose_float", rng, (2, 3, 2), [1, 2, 0], x="float32"),
        transpose_case("transpose_inner_blocks", more, (2, 3, 4, 5), [0, 1, 3, 2]),
        transpose_case("transpose_inner_blocks_from_rom", more, (3, 2, 3, 2), [0, 3, 1, 2], out="fixed<6,2,RND,SAT>",
                       rom=True),
    ]
    return cases + window_sweep(rng, 24) + quotient_cases(rng) + lut_cases(rng)


CASES = make_cases()
# One case of every kernel and block for the build against AMD's headers (it compiles slowly).


# --------------------------------------------------------------------------
# Building and running
# --------------------------------------------------------------------------


def cases_inc(cases: list[Case]) -> str:
    functions = [f"void case_{n}() {{\n  const int ID = {n};\n{c.body}\n}}\n" for n, c in enumerate(cases)]
    calls = "".join(f"  case_{n}();\n" for n in range(len(cases)))
    return "".join(functions) + "void run_cases() {\n" + calls + "}\n"


def data_text(cases: list[Case]) -> str:
    tokens = []
    for c in cases:
        for a in c.data:
            if a.dtype == np.float32:
                tokens += [float(v).hex() for v in a.tolist()]
            else:
                tokens += [str(int(v)) for v in a.tolist()]
    return " ".join(tokens) + "\n"


def build_and_run(cases: list[Case], include_flags: list[str], flags: list[str], headers: Path):
    """Compile the harness with these cases (or find it in the build cache); returns (g++ diagnostics, {case
    number: output tokens})."""
    binary, diagnostics = built({"cases.inc": cases_inc(cases)}, CHECK_CPP,
                                [*flags, *include_flags, "-I", str(KERNELS_ROOT)], (KERNELS_ROOT, headers))
    run = subprocess.run([str(binary)], input=data_text(cases), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and not run.stderr, run.stderr[-4000:]
    results = {}
    for line in run.stdout.splitlines():
        ident, *values = line.split()
        results[int(ident)] = values
    assert sorted(results) == list(range(len(cases)))
    return diagnostics, results


def check(case: Case, tokens: list[str]) -> None:
    expected = np.asarray(case.expected).ravel()
    if case.is_float:
        got = np.array([float.fromhex(t) for t in tokens], dtype=np.float64)
        assert got.shape == expected.shape, f"{case.name}: {got.size} values, expected {expected.size}"
        np.testing.assert_allclose(got, expected.astype(np.float64), rtol=1e-5, atol=1e-6, err_msg=case.name)
        return
    got = np.array([int(t) for t in tokens], dtype=np.int64)
    assert got.shape == expected.shape, f"{case.name}: {got.size} values, expected {expected.size}"
    bad = np.flatnonzero(got != expected)
    assert bad.size == 0, (f"{case.name}: {bad.size} of {got.size} values differ, first at {bad[0]}: "
                           f"got {got[bad[0]]}, expected {expected[bad[0]]}")


@pytest.fixture(scope="module")
def ours():
    return build_and_run(CASES, ["-I", str(INCLUDE)], OURS_FLAGS, INCLUDE)


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------


def test_kernels_compile_without_warnings(ours):
    assert ours[0] == ""


@pytest.mark.parametrize("n", range(len(CASES)), ids=[c.name for c in CASES])
def test_kernel_matches_reference(ours, n):
    check(CASES[n], ours[1][n])


def test_amd_headers_give_the_same_results():
    """Every case, built against AMD's headers (with csim's flags for them, at -O1), matches the reference too."""
    headers = amd_headers(amd_cache())
    flags = [CXX_STANDARD, "-O1", *(f for f in AMD_FLAGS if f not in (CXX_STANDARD, "-O2"))]
    _, results = build_and_run(CASES, amd_include_flags(headers), flags, headers)
    for n, case in enumerate(CASES):
        check(case, results[n])


def test_misuse_is_a_compile_error(tmp_path):
    source = tmp_path / "bad.cpp"
    source.write_text(
        "#include <hlsfuse/kernels.h>\n"
        "typedef ap_fixed<8, 3> T;\n"
        "int main() {\n"
        "  ap_fixed<9, 4> d = 0;\n"
        "  unsigned i = hlsf::lut_index<10, true, 2>(d);\n"
        "  ap_int<8> m = hlsf::assign_quotient<ap_int<8> >(ap_fixed<12, 4>(1.5), 3);\n"
        # a 3x3 window of 2 channels, one output channel: 18 weights, not 17
        "  hlsf::line_buffer<T, 2, 4, 3, 3, 1, 1> lb;\n"
        "  T taps[9 * 2];\n"
        "  lb.snapshot(taps);\n"
        "  static const ap_fixed<8, 1> w[17] = {};\n"
        "  ap_fixed<24, 8> acc = hlsf::conv_mac<ap_fixed<24, 8>, 9, 1, 1, 18, ap_fixed<8, 1> >(0, taps, w, 0, 0);\n"
        "  hls::stream<T> in(\"in\"), out(\"out\");\n"
        # a slice of 12 elements run for 6 iterations, and one whose shapes disagree in rank
        "  hlsf::slice_stage<T, T, hlsf::dims<3, 4>, hlsf::dims<3, 2>, hlsf::dims<0, 0>, hlsf::dims<1, 2>, 6>"
        "(in, out);\n"
        "  hlsf::slice_stage<T, T, hlsf::dims<3, 4>, hlsf::dims<3, 2, 1>, hlsf::dims<0, 0>, hlsf::dims<1, 2>, 12>"
        "(in, out);\n"
        # a reversed slice whose block holds axis 1 on, not axis 0 on
        "  T row[4];\n"
        "  hlsf::slice_block_stage<T, T, hlsf::dims<3, 4>, hlsf::dims<3, 4>, hlsf::dims<2, 0>, hlsf::dims<-1, 1>,"
        " 0, 24>(in, out, row);\n"
        # a transpose block of 2x3 for a 3x4 block, and a permutation of the wrong rank
        "  T block[6];\n"
        "  hlsf::transpose_stage<T, T, 1, hlsf::dims<3, 4>, hlsf::dims<1, 0> >(in, out, block);\n"
        "  T block12[12];\n"
        "  hlsf::transpose_stage<T, T, 1, hlsf::dims<3, 4>, hlsf::dims<2, 0, 1> >(in, out, block12);\n"
        "  hlsf::topk_stage<T, T, 1, 4, 5, false>(in, out);\n"
        "  return static_cast<int>(i) + m.to_int() + acc.to_int() + hlsf::dims<1, 1, 1, 1, 1, 1, 1>::size();\n"
        "}\n"
    )
    cmd = ["g++", *OURS_FLAGS, "-fsyntax-only", "-I", str(INCLUDE), "-I", str(KERNELS_ROOT), str(source)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    err = done.stderr
    for message in ("lut_index: W and SIGNED must be the width and signedness of x's type",
                    "assign_quotient: T_OUT must be ap_fixed or ap_ufixed",
                    "conv2d: w must hold KH*KW*(Cin/GROUPS)*COUT weights",
                    "slice_stage: one iteration per input element",
                    "slice_stage: IN_SHAPE, OUT_SHAPE, START and STEP must have the same rank",
                    "slice_block_stage: the block holds the axes from B on",
                    "transpose_stage: the block holds IN_SHAPE",
                    "transpose_stage: PERM must have one entry per axis",
                    "topk_stage: K must be in 1..N",
                    "hlsf::dims: rank must be 1..6"):
        assert message in err, f"no error {message!r}:\n{err[-4000:]}"
