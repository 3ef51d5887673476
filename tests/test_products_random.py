"""Random graphs of narrow MAC stages, each product built every way hlsfuse builds products: on DSPs, from LUTs,
packed two to a DSP (multiplier "dsp", "lut", "packed") and without a multiplier (1- and 2-bit weights: the kinds
"sign", "ternary", "xnor"), bit-exact with the reference in csim (both header sets) and rtlsim.

A seed draws a graph of several independent layers, one per input (a conv2d of random kernel, stride, padding and
groups, a dense or a matmul of a constant b), each of an input type (8-bit signed or unsigned, 6-bit, a 1-bit code
{0, 1} or a signed bit {-1, 0}) and weights (8-bit over their whole range, 6- or 7-bit, ternary, bipolar), with
output 0 of every layer at the weights' largest value and output 1 at their smallest, so that the frames at the
inputs' range limits (all at the minimum, all at the maximum) reach both ends of the exact accumulator at the
largest fan-in; then a folding: a SIMD and a PE drawn from the divisors, and a multiplier drawn from those the
operands allow on the part (7 series, a DSP48E1, or UltraScale+, a DSP48E2, by the seed), so that packed products
meet their guard bands at the split. Each layer's multiplier or product kind is checked to be the one drawn."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest
from random_graphs import seeds
from test_narrow import extreme_frames

from hlsfuse import GraphBuilder
from hlsfuse.boards import target_of
from hlsfuse.compile import CompileOptions, plan_design
from hlsfuse.lower import Folding
from hlsfuse.lower.area import lut_choice, packed_choice
from hlsfuse.lower.products import product_kind
from hlsfuse.types import parse_dtype

LISTED = (1, 21)  # together they draw every way of building products (the first test checks it)
SEEDS = seeds(LISTED, fresh_count=4)  # four fresh seeds under make test-random
PARTS = ("xc7z020clg400-1", "xczu7ev-ffvc1156-2-e")  # DSP48E1, DSP48E2
LAYERS = 4

X_TYPES = ("fixed<8,3>", "ufixed<8,4>", "fixed<6,2>", "ufixed<1,1>", "fixed<1,1>")
# (weight type, the raw values drawn): the type's whole range, or the 1- and 2-bit kinds' values
W_KINDS = {"wide": ("fixed<8,1>", None), "w7": ("fixed<7,1>", None), "w6": ("fixed<6,1>", None),
           "ternary": ("fixed<2,1>", (-1, 0, 1)), "bipolar": ("fixed<2,2>", (-1, 1))}


@dataclass
class Layer:
    name: str
    op: str
    pe: int
    simd: int
    multiplier: str  # the one drawn: "dsp", "lut", "packed", or the kind of products without a multiplier


def _weights(rng: random.Random, kind: str, shape: tuple[int, ...], axis: int) -> tuple[np.ndarray, str]:
    """Random weights of ``kind`` and their type; output 0 (along ``axis``) all at the largest raw value, output 1
    all at the smallest."""
    dtype, values = W_KINDS[kind]
    t = parse_dtype(dtype)
    choices = list(values) if values else list(range(t.raw_min, t.raw_max + 1))
    raw = np.array([rng.choice(choices) for _ in range(int(np.prod(shape)))], dtype=np.int64).reshape(shape)
    raw = np.moveaxis(raw, axis, 0)
    raw[0], raw[1] = max(choices), min(choices)
    return np.ldexp(np.moveaxis(raw, 0, axis).astype(np.float64), -t.frac), dtype


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def random_products(seed: int):
    """A graph of LAYERS layers, the part, and the layers as drawn (``Layer``)."""
    rng = random.Random(seed)
    part = PARTS[seed % 2]
    b = GraphBuilder(f"products_{seed}", dtype="fixed<16,8>")
    layers, outputs = [], []
    for i in range(LAYERS):
        xt, wk = rng.choice(X_TYPES), rng.choice(list(W_KINDS))
        op = rng.choice(["conv2d", "conv2d", "dense", "matmul"])
        name = f"m{i}"
        if op == "conv2d":
            k, stride = rng.choice([1, 2, 3]), rng.choice([1, 1, 2])
            groups = rng.choice([1, 1, 2])
            c, cout = 2 * rng.randint(1, 3), 2 * rng.randint(1, 3) * groups
            pad = rng.randint(0, k - 1)
            x = b.input(f"x{i}", [1, rng.randint(k, 5), rng.randint(k, 5), c], dtype=xt)
            w, wt = _weights(rng, wk, (k, k, c // groups, cout), 3)
            y = b.conv2d(x, b.constant(f"w{i}", w, dtype=wt), strides=[stride, stride], padding=[pad] * 4,
                         groups=groups, name=name)
            outputs_per_emit, products = cout, k * k * c // groups
        elif op == "dense":
            kk, n = rng.choice([8, 12, 16, 32, 48]), 2 * rng.randint(1, 4)
            x = b.input(f"x{i}", [1, kk], dtype=xt)
            w, wt = _weights(rng, wk, (n, kk), 0)
            y = b.dense(x, b.constant(f"w{i}", w, dtype=wt), name=name)
            outputs_per_emit, products, groups = n, kk, 1
        else:
            kk, n = rng.choice([4, 8, 12]), 2 * rng.randint(1, 3)
            x = b.input(f"x{i}", [1, rng.randint(1, 4), kk], dtype=xt)
            w, wt = _weights(rng, wk, (kk, n), 1)
            y = b.matmul(x, b.constant(f"w{i}", w, dtype=wt), name=name)
            outputs_per_emit, products, groups = n, kk, 1
        outputs.append(y)
        per_group = outputs_per_emit // groups
        pe = rng.choice([d for d in _divisors(outputs_per_emit) if groups == 1 or per_group % d == 0])
        simd = rng.choice([d for d in _divisors(products) if products // d <= 8])
        layers.append(Layer(name, op, pe, simd, "dsp"))
    b.output(*outputs)
    graph = b.build()
    device = target_of(None, part)
    for layer in layers:  # the multiplier, from those the operands allow
        node = graph.node(layer.name)
        x, w = (graph.types[t].dtype for t in node.inputs[:2])
        allowed = ["dsp"]
        if lut_choice(x, w):
            allowed.append("lut")
        if layer.pe > 1 and packed_choice(x, w, device.dsp_slice):
            allowed.append("packed")
        layer.multiplier = rng.choice(allowed)
    return graph, device, layers


def _folding(layers: list[Layer]) -> Folding:
    return Folding(simd=tuple((la.name, la.simd) for la in layers), pe=tuple((la.name, la.pe) for la in layers),
                   multipliers=tuple((la.name, la.multiplier) for la in layers))


def test_the_draws_cover_every_way_of_building_products():
    """Over the listed seeds, every multiplier and every kind of products without one is drawn (so that the
    simulations below exercise them all); each layer is built as drawn."""
    seen = set()
    for seed in LISTED:
        graph, device, layers = random_products(seed)
        planned = plan_design(graph, CompileOptions(fold=_folding(layers), device=device))
        stages = {s.head: s for s in planned.plan.stages if s.schedule.multipliers}
        report = {s["nodes"][0]: s for s in planned.report["stages"] if s["simd"]}
        for layer in layers:
            kind = product_kind(graph, stages[layer.name])
            assert report[layer.name]["products"] == kind
            built = kind or report[layer.name]["multiplier"]
            assert kind is not None or built == layer.multiplier, (seed, layer)
            seen.add(built)
    assert seen == {"dsp", "lut", "packed", "sign", "ternary", "xnor"}


@pytest.mark.gxx
@pytest.mark.verilator
@pytest.mark.parametrize("seed", SEEDS)
def test_random_products_are_bit_exact_in_csim_and_rtlsim(tmp_path, seed):
    from hls_support import csim_both, write_project
    from rtl_design import simulate

    graph, device, layers = random_products(seed)
    plan = plan_design(graph, CompileOptions(fold=_folding(layers), device=device)).plan
    frames = extreme_frames(graph, count=4)
    drawn = ", ".join(f"{la.name} {la.op} {la.multiplier} pe {la.pe} simd {la.simd}" for la in layers)
    out = write_project(graph, tmp_path / "hls", plan)
    result = csim_both(out, frames, graph=graph)
    assert result.passed and result.frames == 4, f"seed {seed} ({drawn}):\n{result.report()}"
    rtl = simulate(graph, tmp_path / "rtl", frames=4, driver="native", plan=plan, inputs=frames)
    assert rtl.passed, f"seed {seed} ({drawn}):\n{rtl.report()}"
