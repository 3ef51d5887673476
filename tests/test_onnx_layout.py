"""Layout algebra of the ONNX importer, checked on random shapes and orders against numpy."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from hlsfuse.frontend.onnx import layout


@st.composite
def shaped_order(draw, min_rank=1, max_rank=5):
    """(ONNX shape, a layout order of it: a permutation with up to two inserted unit axes)."""
    rank = draw(st.integers(min_rank, max_rank))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    order: list[int | None] = list(draw(st.permutations(range(rank))))
    for _ in range(draw(st.integers(0, 2))):
        order.insert(draw(st.integers(0, len(order))), None)
    return shape, tuple(order)


def apply_steps(data, plan):
    for kind, arg in plan:
        data = data.reshape(arg) if kind == "reshape" else np.transpose(data, arg)
    return data


@given(shaped_order(), st.data())
def test_steps_convert_between_any_two_layouts(src, data):
    shape, order = src
    target = list(data.draw(st.permutations(range(len(shape)))))
    if data.draw(st.booleans()):
        target.insert(data.draw(st.integers(0, len(target))), None)
    x = np.arange(int(np.prod(shape))).reshape(shape)
    plan = layout.steps(shape, order, tuple(target))
    assert np.array_equal(apply_steps(layout.to_hls(x, order), plan), layout.to_hls(x, tuple(target)))
    if layout.same_element_order(shape, order, tuple(target)):
        assert [kind for kind, _ in plan] in ([], ["reshape"])  # no data movement


@given(shaped_order(), st.data())
def test_transpose_only_relabels_the_axes(src, data):
    shape, order = src
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = np.arange(int(np.prod(shape))).reshape(shape)
    assert np.array_equal(layout.to_hls(np.transpose(x, perm), layout.transposed(order, perm)), layout.to_hls(x, order))


@given(shaped_order(), st.data())
def test_squeeze_and_unsqueeze_keep_the_element_sequence(src, data):
    shape, order = src
    x = np.arange(int(np.prod(shape))).reshape(shape)
    held = layout.to_hls(x, order).ravel()
    units = tuple(a for a, d in enumerate(shape) if d == 1)
    removed = tuple(sorted(data.draw(st.sets(st.sampled_from(units)) if units else st.just(set()))))
    if removed:
        assert np.array_equal(layout.to_hls(np.squeeze(x, removed), layout.without(order, removed)).ravel(), held)
    inserted = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape)), min_size=1, max_size=2))))
    expanded = x.reshape(_insert_units(shape, inserted))
    new_order = layout.with_units(order, inserted)
    assert np.array_equal(layout.to_hls(expanded, new_order).ravel(), held)


def _insert_units(shape, inserted):
    out = list(shape)
    for a in inserted:
        out.insert(a, 1)
    return out


@given(shaped_order(min_rank=2))
def test_unsqueeze_keeps_a_plain_layout_plain(src):
    shape, _ = src
    assert layout.is_plain(layout.with_units(layout.plain(len(shape)), (0, len(shape))))


@given(shaped_order(min_rank=2))
def test_flat_columns_name_the_onnx_column_of_each_hls_column(src):
    shape, order = src
    order = tuple(a for a in order if a != 0)
    order = (0, *order)  # batch first, as a deferred flatten requires
    x = np.arange(int(np.prod(shape))).reshape(shape)
    n = shape[0]
    columns = layout.flat_columns(shape, order)
    assert np.array_equal(layout.to_hls(x, order).reshape(n, -1), x.reshape(n, -1)[:, columns])
