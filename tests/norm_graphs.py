"""Graphs of layer_norm and rms_norm for the tests of both backends (the shared builds of test_hw_shared.py), and
rows that stress their numerics.

    fixed_norms()      both ops over signed, unsigned and integer inputs, rows of 1 to 32 elements, several
                       norm_dtype and output types and modes (F_norm below, at and above the rsqrt's 24 bits, and
                       negative down to -16, a shift past 64 bits), epsilon 0 (E = 1) to large, gammas and betas
                       of several types, a map stage before and a dense after (a transformer block's LayerNorm ->
                       Linear); five of its stages folded by NORM_FOLD (2 and 4 lanes of 16, 3 of 12, a whole row
                       of 7 per token, 16 of 32)
    float_norms()      both ops in float32 (HLS only)
    norm_frames(graph, seed)   random inputs with adversarial rows: constant rows, rows of one outlier, rows of the
                       type's extremes, rows that differ by one LSB, whole-range random rows
"""

from __future__ import annotations

import numpy as np

from hlsfuse import GraphBuilder, reference
from hlsfuse.ir import Graph
from hlsfuse.lower import Folding
from hlsfuse.types import to_float

__all__ = ["fixed_norms", "float_norms", "NORM_FOLD", "norm_frames", "adversarial_rows"]


def _weights(b: GraphBuilder, n, seed: int, dtype: str, low: float = 0.25, high: float = 2.0):
    """A constant of n values (or shape n) in +-[low, high], a fifth of them negative."""
    rng = np.random.default_rng(seed)
    signs = np.where(rng.random(n) < 0.2, -1.0, 1.0)
    return b.constant(None, signs * rng.uniform(low, high, n), dtype=dtype)


def fixed_norms() -> Graph:
    """Both ops in several types, modes and row sizes; the stages named in NORM_FOLD take lanes."""
    b = GraphBuilder("norms", dtype="fixed<16,6,RND,SAT>")
    x = b.input("x", [3, 4, 16])
    u = b.input("u", [2, 12], dtype="ufixed<10,3>")
    i = b.input("i", [5, 7], dtype="int8")
    w = b.input("w", [2, 32], dtype="fixed<24,4,RND,SAT>")
    one = b.input("one", [3, 1], dtype="fixed<8,2>")
    g16, b16 = _weights(b, 16, 1, "fixed<16,2,RND,SAT>"), _weights(b, 16, 2, "fixed<16,2,RND,SAT>", -1.0, 1.0)
    g8 = _weights(b, 16, 3, "fixed<8,8,RND,SAT>", 1.0, 9.0)  # integer gammas
    tiny = _weights(b, 16, 4, "fixed<12,-2,RND,SAT>", 0.01, 0.1)  # only fractional bits below 2^-2
    gu, bu = _weights(b, 12, 5, "fixed<10,3,RND,SAT>"), _weights(b, 12, 6, "ufixed<12,1,RND,SAT>", 0.0, 1.5)
    gi = _weights(b, 7, 7, "fixed<8,2,RND,SAT>")
    gw, bw = _weights(b, 32, 9, "fixed<18,2,RND,SAT>"), _weights(b, 32, 10, "fixed<18,2,RND,SAT>", -1.0, 1.0)
    g1, b1 = _weights(b, 1, 11, "fixed<8,2,RND,SAT>"), _weights(b, 1, 12, "fixed<8,2,RND,SAT>", -1.0, 1.0)
    r = b.relu(b.add(x, x, dtype="fixed<16,7,RND,SAT>"))  # a map stage before, forked
    ln = b.layer_norm(x, g16, b16, name="fx")
    dense = _weights(b, (8, 16), 13, "fixed<8,1,RND,SAT>", -0.9, 0.9)
    outs = [
        b.op("dense", ln, dense, dtype="fixed<16,6,RND,SAT>"),  # LayerNorm -> Linear
        b.layer_norm(r, g8, b16, norm_dtype="fixed<14,4,TRN,WRAP>", dtype="fixed<12,8,RND_CONV,SAT_SYM>",
                     epsilon=1e-3),
        b.rms_norm(x, tiny, name="fr", norm_dtype="fixed<20,4,RND_CONV,SAT>", dtype="fixed<12,-1,RND_INF,SAT>"),
        # steps of 2^16: (N x) R shifted right by up to 70 bits, floored to 0 or -2^16, then saturating
        b.rms_norm(x, g16, norm_dtype="fixed<4,20,TRN,SAT>", dtype="fixed<8,4,RND,SAT>", epsilon=0.25),
        b.layer_norm(u, gu, bu, name="fu", dtype="fixed<12,3,RND_INF,SAT>"),
        b.rms_norm(u, gu, epsilon=0.0, dtype="ufixed<10,3,RND,SAT>"),  # negative gammas saturate to 0
        # one constant as gamma and beta (one ROM, two readers)
        b.layer_norm(i, gi, gi, name="fi", epsilon=0.0, norm_dtype="fixed<20,4,RND,SAT>", dtype="fixed<16,4,RND,SAT>"),
        b.rms_norm(i, gi, epsilon=0.0, norm_dtype="fixed<40,8,TRN_ZERO,SAT>", dtype="fixed<20,4,RND_ZERO,SAT>"),
        b.layer_norm(w, gw, bw, name="fw", norm_dtype="fixed<44,8,RND,SAT>", dtype="fixed<24,6,RND,SAT>"),  # F 36
        b.layer_norm(one, g1, b1),  # N = 1: beta
    ]
    b.output(*outs)
    return b.build()


NORM_FOLD = Folding(lanes=(("fx", 2), ("fr", 4), ("fu", 3), ("fi", 7), ("fw", 16)))
"""Lanes of fixed_norms' folded stages, by node: 2 and 4 of 16, 3 of 12, a whole row of 7 per token, 16 of 32."""


def float_norms() -> Graph:
    b = GraphBuilder("norms_f", dtype="float32")
    x = b.input("x", [3, 4, 16])
    one = b.input("one", [2, 1])
    rng = np.random.default_rng(31)
    g, be = b.constant(None, rng.uniform(0.5, 1.5, 16)), b.constant(None, rng.uniform(-1, 1, 16))
    g1, b1 = b.constant(None, np.array([1.5])), b.constant(None, np.array([-0.25]))
    b.output(b.layer_norm(x, g, be, epsilon=0.5), b.rms_norm(x, g), b.layer_norm(one, g1, b1))
    return b.build()


def adversarial_rows(dtype, n: int, rng) -> np.ndarray:
    """Raw rows of n elements of a fixed-point type that stress a normalisation: constant (at 0, the extremes and in
    between), one outlier among equal values (|n| = sqrt(N - 1)), the type's extremes alternating or random, values
    one LSB apart, and whole-range random rows."""
    lo, hi = dtype.raw_min, dtype.raw_max
    mid = int(rng.integers(lo, hi, endpoint=True))
    rows = [np.full(n, v) for v in (0, lo, hi, mid)]
    for base, out in ((0, hi), (hi, lo), (lo, hi), (mid, lo)):
        row = np.full(n, base)
        row[int(rng.integers(n))] = out
        rows.append(row)
    rows += [np.where(np.arange(n) % 2, hi, lo), rng.choice([lo, hi], n)]
    near = min(max(mid, lo), hi - 1)
    rows += [near + rng.integers(0, 2, n), rng.integers(lo, hi, n, endpoint=True)]
    return np.asarray(rows, dtype=np.int64)


def norm_frames(graph: Graph, seed: int) -> dict[str, np.ndarray]:
    """``reference.random_inputs`` with the adversarial rows (``adversarial_rows``) written over the first rows of
    every fixed-point input, a different selection per seed."""
    inputs = reference.random_inputs(graph, seed)
    rng = np.random.default_rng(100 + seed)
    for inp in graph.inputs:
        dtype, shape = inp.type.dtype, inp.type.shape
        if dtype.is_float:
            continue
        flat = np.array(inputs[inp.name], dtype=np.float64).reshape(-1, shape[-1])
        rows = adversarial_rows(dtype, shape[-1], rng)
        picked = rows[rng.permutation(len(rows))[: max(1, flat.shape[0] - 1)]]
        flat[: len(picked)] = to_float(picked, dtype)
        inputs[inp.name] = flat.reshape(shape)
    return inputs
