"""Injective ops (reshape, flatten, transpose, concat, slice, pad, squeeze, expand_dims).

Each op is checked against numpy on the real values, on small hand-checked raw
values, for every error message, and for its ``needs_buffer`` answer. Hypothesis
compares the ops with numpy on random shapes.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlsfuse import OPS, GraphBuilder, HlsfuseError, Pattern, parse_dtype, reference
from hlsfuse.types import from_float, to_float

FIX = "fixed<16,6>"


def run_one(build, shapes, dtype=FIX, seed=0):
    """Build ``build(b, *inputs)`` on inputs of ``shapes``; returns (graph, input values, output value)."""
    b = GraphBuilder("g", dtype=dtype)
    names = [b.input(f"x{i}", s) for i, s in enumerate(shapes)]
    out = build(b, *names)
    b.output(out)
    graph = b.build()
    inputs = reference.random_inputs(graph, seed)
    return graph, [inputs[n] for n in names], reference.run(graph, inputs)[out]


def error_of(build, shapes, dtype=FIX) -> str:
    b = GraphBuilder("g", dtype=dtype)
    names = [b.input(f"x{i}", s) for i, s in enumerate(shapes)]
    with pytest.raises(HlsfuseError) as info:
        build(b, *names)
    return str(info.value)


def buffer_reason(build, shapes):
    b = GraphBuilder("g")
    names = [b.input(f"x{i}", s) for i, s in enumerate(shapes)]
    out = build(b, *names)
    b.output(out)
    graph = b.build()
    node = graph.node(out)
    return OPS[node.op].buffer_reason(graph.sigs[out])


# Each case: (builder call, input shapes, numpy model on the real input values)
CASES = {
    "reshape": (lambda b, x: b.reshape(x, [4, -1, 2]), [(2, 3, 4)], lambda x: x.reshape(4, 3, 2)),
    "flatten": (lambda b, x: b.flatten(x), [(2, 3, 4)], lambda x: x.reshape(2, 12)),
    "flatten0": (lambda b, x: b.flatten(x, axis=0), [(2, 3, 4)], lambda x: x.reshape(1, 24)),
    "flatten_neg": (lambda b, x: b.flatten(x, axis=-1), [(2, 3, 4)], lambda x: x.reshape(6, 4)),
    "transpose": (lambda b, x: b.transpose(x), [(2, 3, 4)], lambda x: x.transpose()),
    "transpose_axes": (lambda b, x: b.transpose(x, axes=[0, 2, 1]), [(2, 3, 4)], lambda x: x.transpose(0, 2, 1)),
    "concat": (lambda b, x, y: b.concat(x, y, axis=1), [(2, 3, 4), (2, 1, 4)], lambda x, y: np.concatenate([x, y], 1)),
    "concat_last": (lambda b, x, y, z: b.concat(x, y, z), [(2, 3), (2, 1), (2, 5)], lambda *a: np.concatenate(a, -1)),
    "concat_one": (lambda b, x: b.concat(x, axis=0), [(2, 3)], lambda x: x),
    "slice": (
        lambda b, x: b.slice(x, begin=[1, -1], end=[2, 0], step=[1, -2]),
        [(3, 6, 2)],
        lambda x: x[1:2, -1:0:-2],
    ),
    "slice_clamped": (lambda b, x: b.slice(x, begin=[-100], end=[100]), [(3, 2)], lambda x: x[-100:100]),
    "pad": (
        lambda b, x: b.pad(x, pads=[0, 1, 2, 1, 0, 3], value=-3.0),
        [(2, 3, 4)],
        lambda x: np.pad(x, [(0, 1), (1, 0), (2, 3)], constant_values=-3.0),
    ),
    "pad_reflect": (
        lambda b, x: b.pad(x, pads=[0, 2, 1, 1, 0, 3], mode="reflect"),
        [(2, 3, 4)],
        lambda x: np.pad(x, [(0, 1), (2, 0), (1, 3)], mode="reflect"),
    ),
    "pad_edge": (
        lambda b, x: b.pad(x, pads=[1, 0, 3, 2, 4, 0], mode="edge"),
        [(2, 3, 4)],
        lambda x: np.pad(x, [(1, 2), (0, 4), (3, 0)], mode="edge"),
    ),
    "squeeze": (lambda b, x: b.squeeze(x), [(1, 3, 1, 2)], lambda x: x.reshape(3, 2)),
    "squeeze_axes": (lambda b, x: b.squeeze(x, axes=[-2]), [(1, 3, 1, 2)], lambda x: x.reshape(1, 3, 2)),
    "expand_dims": (lambda b, x: b.expand_dims(x, axis=1), [(2, 3)], lambda x: x[:, None, :]),
    "expand_dims_end": (lambda b, x: b.expand_dims(x, axis=-1), [(2, 3)], lambda x: x[:, :, None]),
    "expand_dims_front": (lambda b, x: b.expand_dims(x, axis=-3), [(2, 3)], lambda x: x[None]),
}


class _Declared:
    """Forwards builder calls, adding ``dtype=`` (the declared output type) to each."""

    def __init__(self, builder, dtype):
        self._b, self._dtype = builder, dtype

    def __getattr__(self, name):
        method = getattr(self._b, name)
        return lambda *args, **kw: method(*args, dtype=self._dtype, **kw)


@pytest.mark.parametrize("dtype", [FIX, "int8", "float32"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_numpy(case, dtype):
    build, shapes, model = CASES[case]
    graph, xs, out = run_one(build, shapes, dtype)
    name = graph.outputs[0]
    expected = model(*xs)
    assert out.shape == expected.shape
    assert graph.types[name].dtype == parse_dtype(dtype)
    assert graph.patterns[name] == Pattern.INJECTIVE
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("case", sorted(CASES))
def test_declared_dtype_assigns_values(case):
    """A declared narrower type rounds the moved values once (TRN: floor) to within one output step."""
    build, shapes, model = CASES[case]
    in_type, out_type = parse_dtype(FIX), parse_dtype("fixed<10,4>")
    b = GraphBuilder("g", dtype=in_type)
    names = [b.input(f"x{i}", s) for i, s in enumerate(shapes)]
    node = build(_Declared(b, out_type), *names)
    b.output(node)
    graph = b.build()
    assert graph.types[node].dtype == out_type
    # quarter the values so that they stay inside fixed<10,4>'s range [-8, 8)
    inputs = {n: to_float(from_float(v / 4, in_type), in_type) for n, v in reference.random_inputs(graph, 1).items()}
    out = reference.run(graph, inputs)[node]
    gap = model(*[inputs[n] for n in names]) - out
    assert np.all((gap >= 0) & (gap < out_type.lsb))
    assert np.any(gap > 0)  # some values really were rounded


# --------------------------------------------------------------------------
# Small cases checked by hand on raw values
# --------------------------------------------------------------------------


def run_raw_one(build, inputs):
    """``inputs``: list of (raw values, dtype). Returns (graph, raw output)."""
    b = GraphBuilder("g")
    names = [b.input(f"x{i}", np.shape(raw), dtype) for i, (raw, dtype) in enumerate(inputs)]
    out = build(b, *names)
    b.output(out)
    graph = b.build()
    raw = {n: np.asarray(r, dtype=np.int64) for n, (r, _) in zip(names, inputs)}
    return graph, reference.run_raw(graph, raw)[out]


def test_transpose_and_reshape_raw():
    x = [[1, 2, 3], [4, 5, 6]]
    _, out = run_raw_one(lambda b, x: b.transpose(x), [(x, "int8")])
    assert out.tolist() == [[1, 4], [2, 5], [3, 6]]
    _, out = run_raw_one(lambda b, x: b.reshape(x, [3, 2]), [(x, "int8")])
    assert out.tolist() == [[1, 2], [3, 4], [5, 6]]
    _, out = run_raw_one(lambda b, x: b.reshape(x, [6]), [(x, "int8")])
    assert out.tolist() == [1, 2, 3, 4, 5, 6]


def test_slice_negative_steps_raw():
    _, out = run_raw_one(lambda b, x: b.slice(x, begin=[-1], end=[-6], step=[-2]), [([0, 1, 2, 3, 4], "int8")])
    assert out.tolist() == [4, 2, 0]
    _, out = run_raw_one(lambda b, x: b.slice(x, begin=[4], end=[-100], step=[-1]), [([0, 1, 2, 3, 4], "int8")])
    assert out.tolist() == [4, 3, 2, 1, 0]
    x = [[0, 1, 2], [3, 4, 5]]
    _, out = run_raw_one(lambda b, x: b.slice(x, begin=[1], end=[2]), [(x, "int8")])
    assert out.tolist() == [[3, 4, 5]]  # the trailing axis is kept whole


def test_concat_mixed_types_raw():
    # int8 [1, -2] and fixed<8,4> [0.5, -0.25] (raw [8, -4])
    ins = [([1, -2], "int8"), ([8, -4], "fixed<8,4>")]
    graph, out = run_raw_one(lambda b, x, y: b.concat(x, y), ins)
    assert str(graph.types[graph.outputs[0]].dtype) == "int8"
    assert out.tolist() == [1, -2, 0, -1]  # 0.5 and -0.25 truncated (floor) to int8
    _, out = run_raw_one(lambda b, x, y: b.concat(x, y, dtype="fixed<16,8>"), ins)
    assert out.tolist() == [256, -512, 128, -64]  # exact: 1, -2, 0.5, -0.25 with 8 fractional bits
    _, out = run_raw_one(lambda b, x, y: b.concat(y, x, dtype="fixed<8,4,TRN,SAT>"), ins)
    assert out.tolist() == [8, -4, 16, -32]


def test_concat_unsigned_and_signed_raw():
    _, out = run_raw_one(lambda b, x, y: b.concat(x, y, dtype="int16"), [([255], "uint8"), ([-128], "int8")])
    assert out.tolist() == [255, -128]


@pytest.mark.parametrize(
    "dtype, value, fill",
    [
        ("int8", 2.5, 3),  # round to nearest (ties up)
        ("int8", -2.5, -2),
        ("int8", -2.75, -3),
        ("int8", 1000.0, 127),  # saturate
        ("int8", -1000.0, -128),
        ("uint8", -1.0, 0),
        ("fixed<8,4>", 0.3, 5),  # 0.3 * 16 = 4.8
        ("fixed<8,4,TRN,WRAP>", 9.0, 127),  # saturates although the type wraps
    ],
)
def test_pad_value_quantized_to_output_type(dtype, value, fill):
    _, out = run_raw_one(lambda b, x: b.pad(x, pads=[1, 2], value=value), [([7], dtype)])
    assert out.tolist() == [fill, 7, fill, fill]


def test_pad_value_uses_declared_type():
    # the input is int8 (raw 3 = 3.0); the output fixed<8,4> holds 3.0 as 48 and 0.3 as 5
    _, out = run_raw_one(lambda b, x: b.pad(x, pads=[0, 1], value=0.3, dtype="fixed<8,4>"), [([3], "int8")])
    assert out.tolist() == [48, 5]


def test_pad_modes_raw():
    # reflect mirrors without repeating the border element (twice over when the pad is longer than the
    # axis, as numpy.pad does), edge repeats it; neither rounds the moved values of the input type
    _, out = run_raw_one(lambda b, x: b.pad(x, pads=[2, 4], mode="reflect"), [([1, 2, 3], "int8")])
    assert out.tolist() == [3, 2, 1, 2, 3, 2, 1, 2, 3]
    _, out = run_raw_one(lambda b, x: b.pad(x, pads=[1, 0, 0, 2], mode="edge"), [([[1, 2], [3, 4]], "fixed<8,4>")])
    assert out.tolist() == [[1, 2, 2, 2], [1, 2, 2, 2], [3, 4, 4, 4]]


def test_pad_float():
    graph, xs, out = run_one(lambda b, x: b.pad(x, pads=[1, 0, 0, 1], value=0.1), [(2, 2)], "float32")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.pad(xs[0], [(1, 0), (0, 1)], constant_values=np.float32(0.1)))


def test_float_output_stays_float32():
    graph, xs, out = run_one(lambda b, x: b.transpose(x), [(2, 3)], "float32")
    values = reference.run_raw(graph, {"x0": xs[0]})
    assert values[graph.outputs[0]].dtype == np.float32


# --------------------------------------------------------------------------
# Error messages
# --------------------------------------------------------------------------

ERRORS = [
    (lambda b, x: b.reshape(x, [2, 0], name="n"), [(2, 3)],
     "node 'n' (reshape): attribute 'newshape' entries must be positive or -1, not [2, 0]"),
    (lambda b, x: b.reshape(x, [-1, -1], name="n"), [(2, 3)],
     "node 'n' (reshape): attribute 'newshape' may hold at most one -1, not 2"),
    (lambda b, x: b.reshape(x, [4, 2], name="n"), [(2, 3)],
     "node 'n' (reshape): cannot reshape [2, 3] (6 elements) to [4, 2]"),
    (lambda b, x: b.reshape(x, [4, -1], name="n"), [(2, 3)],
     "node 'n' (reshape): cannot reshape [2, 3] (6 elements) to [4, -1]"),
    (lambda b, x: b.op("reshape", x, name="n"), [(2, 3)],
     "node 'n' (reshape): missing required attribute 'newshape'"),
    (lambda b, x: b.flatten(x, axis=3, name="n"), [(2, 3)],
     "node 'n' (flatten): attribute 'axis' must be in -2..2 for a 2-dim input, not 3"),
    (lambda b, x: b.flatten(x, axis=-3, name="n"), [(2, 3)],
     "node 'n' (flatten): attribute 'axis' must be in -2..2 for a 2-dim input, not -3"),
    (lambda b, x: b.transpose(x, axes=[0, 0, 1], name="n"), [(2, 3, 4)],
     "node 'n' (transpose): attribute 'axes' must be a permutation of [0, 1, 2], not [0, 0, 1]"),
    (lambda b, x: b.transpose(x, axes=[1, 0], name="n"), [(2, 3, 4)],
     "node 'n' (transpose): attribute 'axes' must be a permutation of [0, 1, 2], not [1, 0]"),
    (lambda b, x: b.transpose(x, axes=[0, 1, -1], name="n"), [(2, 3, 4)],
     "node 'n' (transpose): attribute 'axes' must be a permutation of [0, 1, 2], not [0, 1, -1]"),
    (lambda b: b.concat(name="n"), [],
     "node 'n' (concat): expects at least 1 input(s), got 0"),
    (lambda b, x, y: b.concat(x, y, name="n"), [(2, 3), (2, 3, 1)],
     "node 'n' (concat): input 1 must have 2 dims like input 0, not 3"),
    (lambda b, x, y, z: b.concat(x, y, z, axis=0, name="n"), [(2, 3), (1, 3), (2, 4)],
     "node 'n' (concat): input 2 must match input 0's shape [2, 3] except on axis 0, not [2, 4]"),
    (lambda b, x, y: b.concat(x, y, axis=2, name="n"), [(2, 3), (2, 3)],
     "node 'n' (concat): attribute 'axis' must be in -2..1 for a 2-dim input, not 2"),
    (lambda b, x, y: b.concat(x, y, axis=-3, name="n"), [(2, 3), (2, 3)],
     "node 'n' (concat): attribute 'axis' must be in -2..1 for a 2-dim input, not -3"),
    (lambda b, x: b.concat(x, name="n"), [()],
     "node 'n' (concat): input 0 must have at least 1 dim"),
    (lambda b, x, y: b.concat(x, b.input("f", [2], "float32"), name="n"), [(2,), (2,)],
     "node 'n' (concat): inputs mix float32 and fixed-point types; insert a cast"),
    (lambda b, x, y: b.concat(b.input("a", [2], "fixed<64,0>"), b.input("c", [2], "fixed<40,40>"), name="n"),
     [(2,), (2,)],
     "node 'n' (concat): aligning the inputs needs a 104-bit signed exact intermediate, more than the 64 bits "
     "hlsfuse computes with; use narrower input types"),
    (lambda b, x: b.concat(x, x, dtype="float32", name="n"), [(2,)],
     "node 'n' (concat): output dtype float32 does not match the inputs' family; use cast to convert"),
    (lambda b, x: b.op("slice", x, end=[1], name="n"), [(2, 3)],
     "node 'n' (slice): missing required attribute 'begin'"),
    (lambda b, x: b.slice(x, begin=[0, 0], end=[1], name="n"), [(2, 3)],
     "node 'n' (slice): attribute 'end' must have as many values as 'begin' (2), not 1"),
    (lambda b, x: b.slice(x, begin=[0], end=[1], step=[1, 1], name="n"), [(2, 3)],
     "node 'n' (slice): attribute 'step' must have as many values as 'begin' (1), not 2"),
    (lambda b, x: b.slice(x, begin=[0, 0, 0], end=[1, 1, 1], name="n"), [(2, 3)],
     "node 'n' (slice): attribute 'begin' has 3 values, more than the 2 dims of input 'x'"),
    (lambda b, x: b.slice(x, begin=[0, 0], end=[1, 1], step=[1, 0], name="n"), [(2, 3)],
     "node 'n' (slice): attribute 'step' must not contain 0, not [1, 0]"),
    (lambda b, x: b.slice(x, begin=[0, 2], end=[2, 1], name="n"), [(2, 3)],
     "node 'n' (slice): slice selects no elements of axis 1 (size 3) with begin 2, end 1, step 1"),
    (lambda b, x: b.slice(x, begin=[5], end=[9], name="n"), [(2, 3)],
     "node 'n' (slice): slice selects no elements of axis 0 (size 2) with begin 5, end 9, step 1"),
    (lambda b, x: b.slice(x, begin=[0], end=[2], step=[-1], name="n"), [(2, 3)],
     "node 'n' (slice): slice selects no elements of axis 0 (size 2) with begin 0, end 2, step -1"),
    (lambda b, x: b.pad(x, pads=[1, 1, 1], name="n"), [(2, 3)],
     "node 'n' (pad): attribute 'pads' must have 4 values (before and after each of 2 dims), not 3"),
    (lambda b, x: b.pad(x, pads=[1, -1, 0, 0], name="n"), [(2, 3)],
     "node 'n' (pad): attribute 'pads' must be non-negative, not [1, -1, 0, 0]"),
    (lambda b, x: b.pad(x, pads=[0, 0], value="zero", name="n"), [(2,)],
     "node 'n' (pad): attribute 'value' must be a number, not 'zero'"),
    (lambda b, x: b.pad(x, pads=[1, 1], mode="wrap", name="n"), [(2,)],
     "node 'n' (pad): attribute 'mode' must be one of constant, reflect, edge, not 'wrap'"),
    (lambda b, x: b.pad(x, pads=[1, 1], mode="edge", value=0.5, name="n"), [(2,)],
     "node 'n' (pad): attribute 'value' (0.5) applies to mode 'constant' only, not 'edge'"),
    (lambda b, x: b.squeeze(x, axes=[1], name="n"), [(1, 3)],
     "node 'n' (squeeze): attribute 'axes' names axis 1 of size 3; only size-1 axes can be squeezed"),
    (lambda b, x: b.squeeze(x, axes=[2], name="n"), [(1, 3)],
     "node 'n' (squeeze): attribute 'axes' values must be in -2..1 for a 2-dim input, not 2"),
    (lambda b, x: b.squeeze(x, axes=[0, -2], name="n"), [(1, 3)],
     "node 'n' (squeeze): attribute 'axes' names axis 0 more than once"),
    (lambda b, x: b.squeeze(x, axes=[0], name="n"), [()],
     "node 'n' (squeeze): attribute 'axes' must be empty for a 0-dim input, not [0]"),
    (lambda b, x: b.expand_dims(x, axis=3, name="n"), [(2, 3)],
     "node 'n' (expand_dims): attribute 'axis' must be in -3..2 for a 2-dim input, not 3"),
    (lambda b, x: b.expand_dims(x, axis=-4, name="n"), [(2, 3)],
     "node 'n' (expand_dims): attribute 'axis' must be in -3..2 for a 2-dim input, not -4"),
    (lambda b, x: b.op("expand_dims", x, name="n"), [(2, 3)],
     "node 'n' (expand_dims): missing required attribute 'axis'"),
    (lambda b, x: b.transpose(x, dtype="float32", name="n"), [(2, 3)],
     "node 'n' (transpose): output dtype float32 does not match the inputs' family; use cast to convert"),
    (lambda b, x: b.reshape(b.input("f", [2, 3], "float32"), [3, 2], dtype="int8", name="n"), [(2, 3)],
     "node 'n' (reshape): output dtype int8 does not match the inputs' family; use cast to convert"),
]


@pytest.mark.parametrize("build, shapes, message", ERRORS, ids=[m.split(": ", 1)[1][:60] for _, _, m in ERRORS])
def test_error_messages(build, shapes, message):
    assert error_of(build, shapes) == message


def test_every_injective_op_has_an_error_test():
    tested = {m.split("(", 1)[1].split(")", 1)[0] for _, _, m in ERRORS}
    assert tested == {"reshape", "flatten", "transpose", "concat", "slice", "pad", "squeeze", "expand_dims"}


# --------------------------------------------------------------------------
# needs_buffer (the FPGA fusion mode's question: can it stream in order?)
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, shapes, reason",
    [
        (lambda b, x: b.reshape(x, [6, 4]), [(2, 3, 4)], None),
        (lambda b, x: b.flatten(x), [(2, 3, 4)], None),
        (lambda b, x: b.squeeze(x), [(1, 3, 1)], None),
        (lambda b, x: b.expand_dims(x, axis=0), [(2, 3)], None),
        (lambda b, x: b.pad(x, pads=[1, 1, 1, 1]), [(2, 3)], None),
        (lambda b, x: b.pad(x, pads=[0, 0, 0, 0], mode="reflect"), [(2, 3)], None),  # no padding: a copy
        (lambda b, x: b.pad(x, pads=[0, 0, 0, 1], mode="reflect"), [(2, 3)],
         "reflect padding copies input elements out of stream order"),
        (lambda b, x: b.pad(x, pads=[1, 0, 0, 0], mode="edge"), [(2, 3)],
         "edge padding copies input elements out of stream order"),
        (lambda b, x: b.transpose(x, axes=[0, 1, 2]), [(2, 3, 4)], None),
        (lambda b, x: b.transpose(x, axes=[1, 0, 2]), [(1, 3, 4)], None),  # only a size-1 axis moves
        (lambda b, x: b.transpose(x, axes=[2, 0, 1]), [(3, 4, 1)], None),
        (lambda b, x: b.transpose(x), [(2, 3)], "transpose [1, 0] changes the element order"),
        (lambda b, x: b.transpose(x, axes=[0, 2, 1]), [(1, 3, 4)], "transpose [0, 2, 1] changes the element order"),
        (lambda b, x: b.slice(x, begin=[0, 1], end=[2, 3]), [(2, 4)], None),
        (lambda b, x: b.slice(x, begin=[0, 1], end=[2, 4], step=[1, 2]), [(2, 4)], None),
        (lambda b, x: b.slice(x, begin=[1, 3], end=[0, 2], step=[-1, -1]), [(2, 4)], None),  # one element each
        (lambda b, x: b.slice(x, begin=[0, 3], end=[2, 0], step=[1, -1]), [(2, 4)],
         "negative step on axis 1 reverses the element order"),
        (lambda b, x: b.slice(x, begin=[1], end=[0], step=[-1]), [(2, 4)], None),  # one row: nothing reversed
        (lambda b, x: b.slice(x, begin=[1], end=[-3], step=[-1]), [(2, 4)],
         "negative step on axis 0 reverses the element order"),
        (lambda b, x, y: b.concat(x, y), [(2, 3), (2, 5)], None),  # innermost axis
        (lambda b, x, y: b.concat(x, y, axis=0), [(2, 3), (4, 3)], None),  # whole inputs one after the other
        (lambda b, x, y: b.concat(x, y, axis=1), [(1, 2, 3), (1, 4, 3)], None),  # outer axis of size 1
        (lambda b, x, y: b.concat(x, y, axis=1), [(2, 2, 1), (2, 4, 1)], None),  # only size-1 axes inside
        (lambda b, x, y: b.concat(x, y, axis=1), [(2, 2, 3), (2, 4, 3)],
         "concat on axis 1 (not the innermost) interleaves blocks of its inputs"),
        (lambda b, x, y: b.concat(x, y, axis=-3), [(2, 2, 2, 3), (2, 1, 2, 3)],
         "concat on axis 1 (not the innermost) interleaves blocks of its inputs"),
    ],
)
def test_needs_buffer(build, shapes, reason):
    assert buffer_reason(build, shapes) == reason


# --------------------------------------------------------------------------
# Hypothesis: random shapes against numpy
# --------------------------------------------------------------------------

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)
DTYPES = ["int16", "fixed<12,4>", "float32"]


def exact_values(shape, dtype: str, seed: int) -> np.ndarray:
    """Random values that every type in DTYPES holds exactly."""
    rng = np.random.default_rng(seed)
    return rng.integers(-64, 64, size=shape) / 8.0 if dtype != "int16" else rng.integers(-999, 999, size=shape) * 1.0


def run_values(build, values, dtype):
    b = GraphBuilder("g", dtype=dtype)
    names = [b.input(f"x{i}", v.shape) for i, v in enumerate(values)]
    out = build(b, *names)
    b.output(out)
    graph = b.build()
    return graph, reference.run(graph, dict(zip(names, values)))[out]


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 99))
def test_reshape_random(shape, data, dtype, seed):
    size = math.prod(shape)
    new = data.draw(st.permutations(_factors(size)))
    if new and data.draw(st.booleans()):
        new[data.draw(st.integers(0, len(new) - 1))] = -1
    x = exact_values(shape, dtype, seed)
    graph, out = run_values(lambda b, x: b.reshape(x, new), [x], dtype)
    np.testing.assert_array_equal(out, x.reshape(new))
    assert buffer_reason(lambda b, x: b.reshape(x, new), [shape]) is None


def _factors(n: int) -> list[int]:
    out, d = [], 2
    while n > 1:
        while n % d == 0:
            out.append(d)
            n //= d
        d += 1
    return out or [1]


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 99))
def test_transpose_random(shape, data, dtype, seed):
    perm = data.draw(st.permutations(range(len(shape))))
    x = exact_values(shape, dtype, seed)
    graph, out = run_values(lambda b, x: b.transpose(x, axes=perm), [x], dtype)
    np.testing.assert_array_equal(out, np.transpose(x, perm))
    # it streams exactly when it emits the elements in the order it reads them
    order = np.transpose(np.arange(x.size).reshape(shape), perm).ravel()
    in_order = bool(np.all(np.diff(order) > 0))
    assert (buffer_reason(lambda b, x: b.transpose(x, axes=perm), [shape]) is None) == in_order


@settings(max_examples=80, deadline=None)
@given(shape=shapes, data=st.data(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 99))
def test_slice_random(shape, data, dtype, seed):
    n = data.draw(st.integers(0, len(shape)))
    begin = data.draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n))
    end = data.draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n))
    step = data.draw(st.lists(st.integers(-3, 3).filter(bool), min_size=n, max_size=n))
    index = tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))
    x = exact_values(shape, dtype, seed)
    expected = x[index]
    build = lambda b, x: b.slice(x, begin=begin, end=end, step=step, name="s")  # noqa: E731
    if expected.size == 0:
        axis = next(a for a, d in enumerate(expected.shape) if d == 0)
        message = error_of(build, [shape], dtype)
        assert message.startswith(f"node 's' (slice): slice selects no elements of axis {axis} ")
        return
    graph, out = run_values(build, [x], dtype)
    np.testing.assert_array_equal(out, expected)
    order = np.arange(x.size).reshape(shape)[index].ravel()
    in_order = bool(np.all(np.diff(order) > 0))
    assert (buffer_reason(build, [shape]) is None) == in_order


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 99))
def test_concat_random(shape, data, dtype, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    shapes_in = [tuple(k if i == axis % len(shape) else d for i, d in enumerate(shape)) for k in sizes]
    xs = [exact_values(s, dtype, seed + i) for i, s in enumerate(shapes_in)]
    graph, out = run_values(lambda b, *xs: b.concat(*xs, axis=axis), xs, dtype)
    np.testing.assert_array_equal(out, np.concatenate(xs, axis=axis))


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 99))
def test_pad_random(shape, data, dtype, seed):
    pads = data.draw(st.lists(st.integers(0, 2), min_size=2 * len(shape), max_size=2 * len(shape)))
    value = data.draw(st.integers(-16, 16)) / 4.0
    x = exact_values(shape, dtype, seed)
    graph, out = run_values(lambda b, x: b.pad(x, pads=pads, value=value), [x], dtype)
    fill = math.floor(value + 0.5) if dtype == "int16" else value  # int16 rounds the value to nearest, ties up
    widths = list(zip(pads[: len(shape)], pads[len(shape):]))
    np.testing.assert_array_equal(out, np.pad(x, widths, constant_values=fill))


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data(), mode=st.sampled_from(["reflect", "edge"]), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 99))
def test_pad_modes_random(shape, data, mode, dtype, seed):
    pads = data.draw(st.lists(st.integers(0, 4), min_size=2 * len(shape), max_size=2 * len(shape)))
    x = exact_values(shape, dtype, seed)
    graph, out = run_values(lambda b, x: b.pad(x, pads=pads, mode=mode), [x], dtype)
    widths = list(zip(pads[: len(shape)], pads[len(shape):]))
    np.testing.assert_array_equal(out, np.pad(x, widths, mode=mode))


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=5).map(tuple), data=st.data(),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 99))
def test_squeeze_random(shape, data, dtype, seed):
    ones = [i for i, d in enumerate(shape) if d == 1]
    axes = data.draw(st.none() | st.lists(st.sampled_from(ones), unique=True) if ones else st.none())
    x = exact_values(shape, dtype, seed)
    kw = {} if axes is None else {"axes": axes}
    graph, out = run_values(lambda b, x: b.squeeze(x, **kw), [x], dtype)
    expected = np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(axes))
    np.testing.assert_array_equal(out, expected)
    assert out.shape == expected.shape
