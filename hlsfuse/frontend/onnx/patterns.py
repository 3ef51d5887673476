"""Rewrites of activation and normalisation decompositions into one node, before conversion.

Exporters write some activations and normalisations as small subgraphs of elementwise ops and reductions. Each is
one op in hlsfuse (a table op of hlsfuse/ops/lut.py, layer_norm or rms_norm of hlsfuse/ops/norm.py), which is both
cheaper and more accurate in fixed point than the pieces (whose intermediate results would each be rounded), so
they are recognised on the ONNX graph and replaced:

    GELU, exact (torch nn.GELU() before opset 20, and hand-written forms):
        x -> Div(sqrt 2) | Mul(1/sqrt 2) -> Erf -> Add(1) -> s;   0.5 * x * s  in any order of the Muls
                                                                   (torch: Mul(x, s) -> Mul(0.5))
                                                              ==>  Gelu(x, approximate="none")
    GELU, tanh approximation (torch nn.GELU(approximate="tanh"), HF's NewGELU):
        x + 0.044715 * x^3 (x^3: Pow(x, 3), Mul(x, Mul(x, x)) ...) -> Mul(sqrt(2/pi)) -> Tanh -> Add(1) -> s;
        0.5 * x * s                                            ==>  Gelu(x, approximate="tanh")
    SiLU / Swish (torch nn.SiLU: Sigmoid then Mul):
        Mul(x, Sigmoid(x))                                     ==>  Silu(x)   (domain hlsfuse.pattern)
    LayerNorm (torch nn.LayerNorm exported before opset 17), over the last axis (ReduceMean's axes [-1] or
    [rank - 1] as attribute or, from opset 18, input; keepdims 1):
        m = ReduceMean(x); d = Sub(x, m); v = ReduceMean(Pow(d, 2) | Mul(d, d)); s = Sqrt(Add(v, eps));
        Div(d, s) | Mul(d, Reciprocal(s)), then Mul(gamma) and Add(beta) when constant (either operand order)
                                                               ==>  LayerNormalization(x, gamma, beta, epsilon)
    RMSNorm (torch nn.RMSNorm, Hugging Face's LlamaRMSNorm):
        v = ReduceMean(Pow(x, 2) | Mul(x, x)); s = Sqrt(Add(v, eps)); Div(x, s) | Mul(x, Reciprocal(s)) |
        Mul(x, Div(1, s)), then Mul(gamma) when constant      ==>  RMSNormalization(x, gamma, epsilon)
                                                                    (domain hlsfuse.pattern)
    A normalisation without its Mul and Add (elementwise_affine=False) gets no gamma or beta: the converter
    takes ones and zeros. gamma and beta are constants of N values (or of one), possibly with leading axes of 1.

A product is matched as a monomial c * x^p over scalar constants (Mul, Div by a constant, Pow by a constant
integer), so every association and order of its factors is one case; constants are compared with float32's
tolerance (a few roundings of float32 arithmetic). A rewrite applies only when every intermediate tensor is
read by the pattern alone (not by another node, not a graph output); otherwise the nodes stay as they are and
convert one by one. The replacement node takes the name and the output of the pattern's last node, so
precision maps that name the output still apply.

Gelu is ONNX's own op (opset 20), LayerNormalization (17) too, converted by the same converters at any opset once
rewritten here; SiLU has no ONNX op below opset 24 and RMSNormalization none below 23 (hlsfuse reads up to 21), so
their nodes live in hlsfuse's private domain ``PATTERN_DOMAIN``. LayerNorm's d = x - mean is read by two nodes of the
pattern, the square and the division, and by nothing else.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .fold import ints_input, static_constants
from .model import Model, NodeDef, Unsupported

__all__ = ["rewrite_patterns", "PATTERN_DOMAIN"]

PATTERN_DOMAIN = "hlsfuse.pattern"

TOLERANCE = 1e-6  # relative: float32's epsilon is 1.2e-7; a constant may be the product of a few roundings
SQRT2 = math.sqrt(2.0)
TANH_BETA = math.sqrt(2.0 / math.pi)
TANH_KAPPA = 0.044715


def _close(value: float, expected: float) -> bool:
    return abs(value - expected) <= TOLERANCE * abs(expected)


@dataclass(frozen=True)
class _Graph:
    """What a matcher looks up: producers, reader counts (graph outputs count), reading nodes, constants, static
    shapes and the opset."""

    producer: dict
    readers: Counter
    consumers: dict
    consts: dict
    shapes: dict
    opset: int

    def scalar(self, name: str) -> float | None:
        value = self.consts.get(name)
        if value is None or np.size(value) != 1 or np.asarray(value).dtype.kind not in "fiu":
            return None
        return float(np.asarray(value, dtype=np.float64).reshape(-1)[0])

    def internal(self, name: str) -> bool:
        """A tensor read by one node only (graph outputs count as readers)."""
        return self.readers[name] == 1

    def reader(self, name: str) -> NodeDef | None:
        """The single node reading ``name`` (once, and not a graph output), or None."""
        found = self.consumers.get(name, ())
        return found[0] if len(found) == 1 and self.internal(name) else None

    def read_only_by(self, name: str, nodes) -> bool:
        """``name`` is read by exactly ``nodes`` (any number of times each) and is not a graph output."""
        found = self.consumers.get(name, ())
        uses = sum(n.inputs.count(name) for n in found)
        return {id(n) for n in found} == {id(n) for n in nodes} and self.readers[name] == uses


@dataclass(frozen=True)
class _Found:
    """A matched pattern: the replacement's inputs and attributes, its last node (whose name and output the
    replacement takes) and every node it replaces."""

    inputs: tuple[str, ...]
    last: NodeDef
    taken: tuple[NodeDef, ...]
    attrs: dict


def _monomial(g: _Graph, t: str, x: str, depth: int = 4) -> tuple[float, int, tuple[NodeDef, ...]] | None:
    """``t`` as c * x^p built by Mul, Div by a constant and Pow by a constant integer from ``x`` and scalar
    constants: (c, p, the nodes computing it); None when it is not one. Nodes below the top one must have
    their outputs read by the monomial alone."""
    if t == x:
        return 1.0, 1, ()
    c = g.scalar(t)
    if c is not None:
        return c, 0, ()
    node = g.producer.get(t)
    if depth == 0 or node is None or node.domain or node.op not in ("Mul", "Div", "Pow") or len(node.inputs) != 2:
        return None
    parts = []
    for name in node.inputs:
        if name != x and g.scalar(name) is None and not g.internal(name):
            return None
        part = _monomial(g, name, x, depth - 1)
        if part is None:
            return None
        parts.append(part)
    (ca, pa, na), (cb, pb, nb) = parts
    if node.op == "Mul":
        return ca * cb, pa + pb, (*na, *nb, node)
    if node.op == "Div":
        if pb != 0 or cb == 0:
            return None
        return ca / cb, pa, (*na, *nb, node)
    if pb != 0 or cb not in (1.0, 2.0, 3.0):  # Pow(x, 3): the tanh form's cube
        return None
    return ca ** int(cb), pa * int(cb), (*na, *nb, node)


def _one_plus(g: _Graph, t: str) -> NodeDef | None:
    """The node computing 1 + t (Add with a scalar constant 1, either order) as ``t``'s only reader."""
    add = g.reader(t)
    if add is None or add.op != "Add" or add.domain or len(add.inputs) != 2:
        return None
    other = add.inputs[1] if add.inputs[0] == t else add.inputs[0]
    one = g.scalar(other)
    return add if one is not None and _close(one, 1.0) else None


def _half_x_times(g: _Graph, s: str, x: str) -> tuple[NodeDef, tuple[NodeDef, ...]] | None:
    """The last node of 0.5 * x * s (Muls of s, x and constants in any order and association, or a Div by 2) and
    the nodes it takes, climbing from ``s`` through single readers; None when there is no such product."""
    current, coef, power, taken = s, 1.0, 0, []
    for _ in range(3):
        node = g.reader(current)
        if node is None or node.domain or node.op not in ("Mul", "Div") or len(node.inputs) != 2:
            return None
        if node.op == "Div" and node.inputs[0] != current:
            return None
        other = node.inputs[1] if node.inputs[0] == current else node.inputs[0]
        if other != x and g.scalar(other) is None and not g.internal(other):
            return None
        part = _monomial(g, other, x)
        if part is None or (node.op == "Div" and part[1] != 0):
            return None
        c, p, below = part
        coef, power = (coef / c, power) if node.op == "Div" else (coef * c, power + p)
        taken += [*below, node]
        current = node.outputs[0]
        if power == 1 and _close(coef, 0.5):
            return node, tuple(taken)
        if power > 1:
            return None
    return None


def _gelu_erf(g: _Graph, erf: NodeDef) -> _Found | None:
    u = erf.inputs[0]
    scaled = g.producer.get(u)
    if scaled is None or not g.internal(u) or scaled.op not in ("Mul", "Div"):
        return None
    for x in scaled.inputs:
        if g.scalar(x) is not None:
            continue
        inner = _monomial(g, u, x)
        if inner is None or inner[1] != 1 or not _close(inner[0], 1.0 / SQRT2):
            continue
        add = _one_plus(g, erf.outputs[0])
        outer = add and _half_x_times(g, add.outputs[0], x)
        if outer:
            return _Found((x,), outer[0], (*inner[2], erf, add, *outer[1]), {"approximate": "none"})
    return None


def _gelu_tanh(g: _Graph, tanh: NodeDef) -> _Found | None:
    u = tanh.inputs[0]
    scaled = g.producer.get(u)
    if scaled is None or not g.internal(u) or scaled.op != "Mul" or scaled.domain:
        return None
    # sqrt(2/pi) * (x + kappa x^3): the Mul's operands are the constant and the Add
    beta = [g.scalar(n) for n in scaled.inputs]
    if sorted(b is None for b in beta) != [False, True]:
        return None
    coefficient = next(b for b in beta if b is not None)
    total = next(n for n, b in zip(scaled.inputs, beta) if b is None)
    add = g.producer.get(total)
    if not _close(coefficient, TANH_BETA) or add is None or add.op != "Add" or not g.internal(total):
        return None
    for x, cube in (add.inputs, reversed(add.inputs)):
        part = g.internal(cube) and _monomial(g, cube, x)
        if not part or part[1] != 3 or not _close(part[0], TANH_KAPPA):
            continue
        one = _one_plus(g, tanh.outputs[0])
        outer = one and _half_x_times(g, one.outputs[0], x)
        if outer:
            return _Found((x,), outer[0], (*part[2], add, scaled, tanh, one, *outer[1]), {"approximate": "tanh"})
    return None


def _silu(g: _Graph, sigmoid: NodeDef) -> _Found | None:
    x, s = sigmoid.inputs[0], sigmoid.outputs[0]
    mul = g.reader(s)
    if mul is None or mul.op != "Mul" or mul.domain or sorted(mul.inputs) != sorted((x, s)):
        return None
    return _Found((x,), mul, (sigmoid, mul), {})


# --------------------------------------------------------------------------
# LayerNorm and RMSNorm
# --------------------------------------------------------------------------


def _mean_of_last(g: _Graph, node: NodeDef | None, x: str, rank: int) -> bool:
    """``node`` is ReduceMean(x) over the last of ``rank`` axes only, keeping it."""
    if node is None or node.op != "ReduceMean" or node.domain or node.inputs[0] != x or not node.attr("keepdims", 1):
        return False
    try:
        axes = ints_input(node, [g.consts.get(name) for name in node.inputs], g.opset, 18, "axes", 1)
    except Unsupported:  # computed axes
        return False
    return axes is not None and len(axes) == 1 and axes[0] in (-1, rank - 1)


def _squared(g: _Graph, node: NodeDef | None, x: str) -> bool:
    """``node`` is Pow(x, 2) or Mul(x, x)."""
    if node is None or node.domain or len(node.inputs) != 2:
        return False
    if node.op == "Mul":
        return node.inputs == (x, x)
    two = g.scalar(node.inputs[1])
    return node.op == "Pow" and node.inputs[0] == x and two is not None and _close(two, 2.0)


def _root_of_mean(g: _Graph, mean: NodeDef) -> tuple[float, NodeDef, tuple[NodeDef, ...]] | None:
    """From a mean of squares on: Add(eps) -> Sqrt, each the single reader: (eps, the Sqrt, the nodes)."""
    add = g.reader(mean.outputs[0])
    if add is None or add.op != "Add" or add.domain or len(add.inputs) != 2:
        return None
    other = add.inputs[1] if add.inputs[0] == mean.outputs[0] else add.inputs[0]
    eps = g.scalar(other)
    root = g.reader(add.outputs[0])
    if eps is None or eps < 0 or root is None or root.op != "Sqrt" or root.domain:
        return None
    return eps, root, (add, root)  # (eps, the Sqrt, the nodes)


def _divided(g: _Graph, d: str, root: NodeDef) -> tuple[NodeDef, tuple[NodeDef, ...]] | None:
    """d / s for s = the Sqrt's output, as Div(d, s), Mul(d, Reciprocal(s)) or Mul(d, Div(1, s)) (either operand
    order of the Mul), s and its reciprocal read by the pattern alone: (the last node, the nodes after the Sqrt)."""
    s = root.outputs[0]
    after = g.reader(s)
    if after is None or after.domain:
        return None
    if after.op == "Div" and after.inputs == (d, s):
        return after, (after,)
    one = g.scalar(after.inputs[0]) if after.op == "Div" else None
    if after.op == "Reciprocal" or (one is not None and _close(one, 1.0) and after.inputs[1] == s):
        mul = g.reader(after.outputs[0])
        inverse = after.outputs[0]
        if mul is not None and mul.op == "Mul" and not mul.domain and sorted(mul.inputs) == sorted((d, inverse)):
            return mul, (after, mul)
    return None


def _affine(g: _Graph, last: NodeDef, x: str, op: str) -> tuple[str, NodeDef] | None:
    """The single reader of ``last``'s output that is ``op`` (Mul, Add) with a constant of N values (or one) whose
    other axes are 1 and no more than x's: (the constant, the node)."""
    node = g.reader(last.outputs[0])
    if node is None or node.op != op or node.domain or len(node.inputs) != 2 or x not in g.shapes:
        return None
    other = node.inputs[1] if node.inputs[0] == last.outputs[0] else node.inputs[0]
    value = g.consts.get(other)
    shape, n = g.shapes[x], g.shapes[x][-1] if g.shapes[x] else 1
    if value is None or np.asarray(value).dtype.kind != "f" or np.ndim(value) > len(shape):
        return None
    dims = np.shape(value)
    if np.size(value) not in (1, n) or any(d != 1 for d in dims[:-1]):
        return None
    return other, node


def _with_affine(g: _Graph, last: NodeDef, x: str, beta: bool) -> tuple[tuple[str, ...], NodeDef, tuple]:
    """(gamma, and beta when ``beta``, each '' when absent; the last node; the nodes of the affine part)."""
    names, taken = [], []
    for op in ("Mul", "Add") if beta else ("Mul",):
        found = _affine(g, last, x, op)
        if found is None:
            names.append("")
            continue
        names.append(found[0])
        last = found[1]
        taken.append(last)
    return tuple(names), last, tuple(taken)


def _layer_norm(g: _Graph, mean: NodeDef) -> _Found | None:
    x = mean.inputs[0]
    sub = g.reader(mean.outputs[0])
    if x not in g.shapes or not _mean_of_last(g, mean, x, len(g.shapes[x])):
        return None
    if sub is None or sub.op != "Sub" or sub.domain or sub.inputs != (x, mean.outputs[0]):
        return None
    d = sub.outputs[0]
    for square in g.consumers.get(d, ()):
        variance = g.reader(square.outputs[0]) if _squared(g, square, d) else None
        if not _mean_of_last(g, variance, square.outputs[0], len(g.shapes[x])):
            continue
        root = _root_of_mean(g, variance)
        divided = root and _divided(g, d, root[1])
        if not divided or not g.read_only_by(d, (square, divided[0])):
            continue
        (gamma, beta), last, affine = _with_affine(g, divided[0], x, beta=True)
        taken = (mean, sub, square, variance, *root[2], *divided[1], *affine)
        return _Found((x, gamma, beta), last, taken, {"axis": -1, "epsilon": root[0]})
    return None


def _rms_norm(g: _Graph, square: NodeDef) -> _Found | None:
    x = square.inputs[0]
    if not _squared(g, square, x) or x not in g.shapes:
        return None
    mean = g.reader(square.outputs[0])
    if not _mean_of_last(g, mean, square.outputs[0], len(g.shapes[x])):
        return None
    root = _root_of_mean(g, mean)
    divided = root and _divided(g, x, root[1])
    if not divided:
        return None
    (gamma,), last, affine = _with_affine(g, divided[0], x, beta=False)
    return _Found((x, gamma), last, (square, mean, *root[2], *divided[1], *affine), {"axis": -1, "epsilon": root[0]})


# the first node of each pattern -> (its matcher, the replacement's op and domain)
_PATTERNS = {
    "Erf": (_gelu_erf, "Gelu", ""),
    "Tanh": (_gelu_tanh, "Gelu", ""),
    "Sigmoid": (_silu, "Silu", PATTERN_DOMAIN),
    "ReduceMean": (_layer_norm, "LayerNormalization", ""),
    "Pow": (_rms_norm, "RMSNormalization", PATTERN_DOMAIN),
    "Mul": (_rms_norm, "RMSNormalization", PATTERN_DOMAIN),
}


def rewrite_patterns(model: Model) -> Model:
    """``model`` with each activation and normalisation decomposition of the module note replaced by its one node."""
    nodes = model.nodes
    consumers: dict[str, list[NodeDef]] = {}
    for n in nodes:
        for name in dict.fromkeys(n.inputs):  # a node reading a tensor twice (Mul(x, x)) is one consumer
            if name:
                consumers.setdefault(name, []).append(n)
    shapes = dict(model.shapes)
    shapes.update((i.name, tuple(i.shape)) for i in (*model.inputs, *model.outputs) if i.shape is not None)
    g = _Graph(
        producer={out: n for n in nodes for out in n.outputs if out},
        readers=Counter([name for n in nodes for name in n.inputs if name] + [o.name for o in model.outputs]),
        consumers=consumers,
        consts=static_constants(model),
        shapes=shapes,
        opset=model.opset,
    )
    replaced: dict[int, NodeDef] = {}  # the last node (by identity: names need not be unique) -> the replacement
    dropped: set[int] = set()
    for node in nodes:
        entry = _PATTERNS.get(node.op) if not node.domain else None
        if entry is None or id(node) in dropped:
            continue
        matcher, op, domain = entry
        found = matcher(g, node)
        if found is None:
            continue
        if any(id(n) in dropped or id(n) in replaced for n in found.taken):
            continue
        dropped.update(id(n) for n in found.taken if n is not found.last)
        replaced[id(found.last)] = NodeDef(found.last.name, op, found.inputs, found.last.outputs[:1], found.attrs,
                                           domain)
    if not replaced:
        return model
    kept = [replaced.get(id(n), n) for n in nodes if id(n) not in dropped]
    return Model(model.name, model.source, model.opset, model.inputs, model.outputs, model.initializers, kept,
                 model.shapes, model.producer)
