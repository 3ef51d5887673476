"""Folding: how many products per cycle each MAC stage computes, chosen to fit a budget or meet a rate.

A MAC stage (conv2d, dense, matmul) computes SIMD products per iteration, SIMD a divisor of its
products per output (``schedule.Folded``); map, window, rows, reduce and own stages move ``lanes``
elements per token (a window or rows stage also PE outputs per emit, and a window stage holds
``snapshots``). A folding is these factors per stage (and the ports' lanes), and the solver picks it:

    budget (DSPs, BRAM18s,  minimise the cycles per frame, max over stages of their iterations
    LUTs)                   (and the ports' tokens), then give every stage the fewest DSPs (then
                            BRAM18s) that still meet that rate
    target cycles per frame minimise DSPs (then BRAM18s) among the foldings that meet it

Both are exact over the divisor choices. For a rate T, each stage independently may take any of
its choices with at most T iterations; the cheapest feasible folding is the cheapest choice of each
stage (DSPs and BRAM18s add up over stages), unless both budgets bind, where a knapsack over the
DSP budget (``_knapsack``, minimum BRAM18 per DSP count) decides exactly. A LUT budget (a board's LUTs)
is a constraint checked on those picks, and where they exceed it, on the picks with the fewest LUTs
(then DSPs, then BRAM18s): not exact when it binds together with another budget, but never over it.
A MAC stage of operands at most 8 bits wide (``area.lut_choice``) also has each choice with its products in
LUTs (multiplier "lut"); those are taken only where no folding with every product on DSPs meets the rate within
the budget, and then by a knapsack over the DSP budget for the fewest LUTs (checked against the LUT and BRAM18
budgets). A MAC stage whose products pack two to a DSP slice (``area.packed_choice``) has each choice of PE 2 or
more with PE lanes 2i and 2i + 1 sharing a DSP too (multiplier "packed", ``packing.py``): a DSP choice like the
others, fewer DSPs for a few more LUTs, and a member of the knapsack where LUT products stand in. Feasibility is
monotone in T, so a binary search over the stages' distinct iteration counts finds the
smallest feasible rate.
A choice costs its stage and the width converter its input lanes bring (``choice_area``).
The FIFOs (their depths follow the timing of the folded plan) are counted from the plan being
folded; ``fit`` lowers the result and, if its FIFOs moved it over a budget, solves again with the
difference taken off.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import HlsfuseError
from ..fileio import check_readable
from ..fusion import FusionPlan
from ..ir import Graph
from . import DataflowPlan, Folding, LowerOptions, check_port, lower, refold
from .area import Area, Dsp, buffer_area, design_area, inflow_area, lut_choice, packed_choice, stage_area
from .products import product_kind
from .schedule import MULTIPLIERS
from .stage_window import line_buffer, window_emits, window_engine, window_geometry

__all__ = ["Budget", "Choice", "Space", "choices", "choice_area", "space", "solve", "fit", "BUDGETS", "binding",
           "within", "fold_json", "read_fold"]


@dataclass(frozen=True)
class Budget:
    """Limits for the solver; None: no limit. ``cycles``: the target cycles per frame."""

    dsp: int | None = None
    bram18: int | None = None
    cycles: int | None = None
    lut: int | None = None

    def __post_init__(self):
        for name in ("dsp", "bram18", "cycles", "lut"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise HlsfuseError(f"budget '{name}' must be a non-negative integer, not {value!r}")

    @property
    def empty(self) -> bool:
        return self.dsp is None and self.bram18 is None and self.cycles is None and self.lut is None

    def text(self) -> str:
        parts = [f"--dsp {self.dsp}" if self.dsp is not None else "",
                 f"--bram {self.bram18}" if self.bram18 is not None else "",
                 f"--target-cycles {self.cycles}" if self.cycles is not None else "",
                 f"(LUTs {self.lut})" if self.lut is not None else ""]
        return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class Choice:
    """One folding of a stage (the factors of its Folding entry) and its cost (``stage_area``'s figures)."""

    simd: int | None  # MAC stages
    lanes: int  # elements per token of a map stage, per push of a window or rows stage, per iteration of a reduce
    pe: int  # window and rows stages: outputs per emit
    snapshots: int  # window stages: completed windows held for emission
    cycles: int
    dsp: int
    bram18: int
    lut: int
    multiplier: str = "dsp"  # MAC stages: how the products are built (schedule.MULTIPLIERS)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def is_mac(stage) -> bool:
    """A conv2d, dense or matmul stage: the schedule has multipliers."""
    return stage.schedule.multipliers > 0


FOLDABLE = ("map", "window", "rows", "reduce", "own")
"""The stage kinds the solver folds; the forks and converters follow their neighbours (a fork's tokens are its
producer's, a converter's iterations those of its busier end)."""


def choices(graph: Graph, fusion: FusionPlan, plan: DataflowPlan, stage, dsp: Dsp) -> list[Choice]:
    """The stage's foldings that no other beats in cycles, DSPs, BRAM18s and LUTs at once, fastest last.

    A window or rows stage's factors are its input lanes L (channels or row elements per push), PE (output
    channels or columns per emit) and (conv2d, dense, matmul) SIMD, each a divisor of what it divides; for
    each (PE, SIMD) the input lanes are tried from 1 up until the stage runs as fast as with all of them and
    no wider line buffer needs fewer BRAM18s (from there on more lanes only cost LUTs; a rows stage's lanes
    change no memory). A map stage's lanes and a reduce stage's lanes (divisors of its input's innermost
    dimension) are tried in full, and so are an own stage's (those its op allows).
    Illegal combinations (lanes that a broadcast input's innermost run or a reduce stage's output does not
    allow, PE over weights computed by another stage) are skipped."""
    main = stage.schedule.main

    def cost(simd, lanes=1, pe=1, multiplier="dsp", q=None) -> Choice | None:
        if q is None:
            q = 1
            if stage.kind == "window" and not main.out_channels % pe and not main.geometry.c % lanes:
                # as many snapshots as make it faster (``_trim`` keeps those a rate needs)
                emits = window_emits(main.out_channels, pe, main.products, simd or main.products)
                q = window_engine(window_geometry(graph, stage.head, lanes), emits).fastest_slots
        try:
            folded = refold(graph, fusion, plan, stage, simd, lanes, pe, q, multiplier, dsp)
        except HlsfuseError:
            return None
        area = choice_area(graph, plan, folded, dsp)
        return Choice(simd, lanes, pe, q, folded.cycles, area.dsp, area.bram18, area.lut, multiplier)

    found: list[Choice | None] = []
    if stage.kind in ("window", "rows"):
        if stage.kind == "window":
            simds = _divisors(main.products) if main.combine == "mac" else [None]
            lanes, pes = _divisors(main.geometry.c), _divisors(main.out_channels)
            # the input lanes change the cycles and the line buffer only: the BRAM18s of its banks per lane count
            bits = graph.types[graph.node(stage.head).inputs[0]].dtype.bits
            stored = [buffer_area(line_buffer(window_geometry(graph, stage.head, ll), bits)).bram18 for ll in lanes]
        else:  # a rows stage's input lanes change its cycles only (its row is registers whatever they are)
            simds, lanes, pes = _divisors(main.products), _divisors(main.k), _divisors(main.n)
            stored = [0] * len(lanes)
        for pe in pes:
            for simd in simds:
                fastest = cost(simd, lanes[-1], pe)
                if fastest is None:
                    continue
                narrower = None
                for k, ll in enumerate(lanes[:-1]):
                    if narrower is not None and narrower.cycles <= fastest.cycles and min(stored[k:]) >= stored[k - 1]:
                        break  # as fast as it gets, and wider lanes save no BRAM18 (they cost LUTs)
                    narrower = cost(simd, ll, pe)
                    found.append(narrower)
                found.append(fastest)
    elif stage.kind == "map":
        inner = graph.types[stage.sink].shape[-1] if graph.types[stage.sink].shape else 1
        found = [cost(None, ll) for ll in _divisors(inner)]
    elif stage.kind in ("reduce", "own"):  # the lanes its op allows (``own.check_lanes``)
        source = graph.types[graph.node(stage.head).inputs[0]]
        found = [cost(None, ll) for ll in _divisors(source.shape[-1] if source.shape else 1)]
    else:
        raise HlsfuseError(f"fold: a {stage.kind} stage has one schedule")
    # a MAC stage's operands, unless its products need no multiplier (1- and 2-bit weights, ``products``)
    multiplies = is_mac(stage) and product_kind(graph, stage) is None
    operands = [graph.types[i].dtype for i in graph.node(stage.head).inputs[:2]] if multiplies else []
    if operands and packed_choice(*operands, dsp):
        # each of PE 2 or more with its PE lanes' products two to a DSP too: the same cycles, fewer DSPs
        found += [cost(c.simd, c.lanes, c.pe, "packed", c.snapshots) for c in found if c is not None and c.pe > 1]
    out = _front(c for c in found if c is not None)
    if operands and lut_choice(*operands):
        # each of them with its products in LUTs too: the same cycles, no DSP, more LUTs
        folds = dict.fromkeys((c.simd, c.lanes, c.pe, c.snapshots) for c in out)
        out = _front([*out, *(cost(*f[:3], "lut", f[3]) for f in folds)])
    return out[::-1]


def _front(found) -> list[Choice]:
    """The choices no other beats in cycles, DSPs, BRAM18s and LUTs at once, fastest first."""
    out: list[Choice] = []
    for c in sorted((c for c in found if c is not None), key=lambda c: (c.cycles, c.dsp, c.bram18, c.lut)):
        if not any(k.dsp <= c.dsp and k.bram18 <= c.bram18 and k.lut <= c.lut for k in out):  # k is as fast
            out.append(c)
    return out


def choice_area(graph: Graph, plan: DataflowPlan, stage, dsp: Dsp) -> Area:
    """What a choice costs: the folded stage's own area and what its input lanes cost around it
    (``area.inflow_area``)."""
    return stage_area(graph, stage, dsp) + inflow_area(plan, stage)


def _structure(graph: Graph, stage) -> tuple:
    """What a stage's choices depend on, without names: its kind and uses, and per node its op, signature and
    type with each input as a node of the stage (by position), a constant (by type: its values cost nothing
    more) or a streamed tensor (by order of first use and type). Stages alike share their choices."""
    position = {n: k for k, n in enumerate(stage.nodes)}
    outside: dict[str, int] = {}

    def ref(t: str) -> tuple:
        if t in position:
            return ("node", position[t])
        if t in graph.constant_map:
            return ("constant", graph.types[t])
        return ("tensor", outside.setdefault(t, len(outside)), graph.types[t])

    nodes = tuple((graph.node(n).op, repr(graph.sigs[n]), graph.types[n], tuple(ref(i) for i in graph.node(n).inputs))
                  for n in stage.nodes)
    return stage.kind, stage.uses, nodes


def _knapsack(options: list[list[Choice]], dsp_budget: int, value: str = "bram18") -> list[Choice] | None:
    """The choice per stage with the fewest ``value`` (BRAM18s, or LUTs) in total and at most ``dsp_budget``
    DSPs (None: none)."""
    inf = np.iinfo(np.int64).max // 4
    best = np.full(dsp_budget + 1, inf, dtype=np.int64)
    best[0] = 0
    picks = []
    for opts in options:
        new = np.full_like(best, inf)
        arg = np.full(best.shape, -1, dtype=np.int64)
        for k, c in enumerate(opts):
            if c.dsp > dsp_budget:
                continue
            cand = np.full_like(best, inf)
            cand[c.dsp:] = best[: dsp_budget + 1 - c.dsp] + getattr(c, value)
            better = cand < new
            new[better], arg[better] = cand[better], k
        picks.append(arg)
        best = new
    if best.min() >= inf:
        return None
    d = int(best.argmin())
    out = []
    for opts, arg in zip(reversed(options), reversed(picks)):
        c = opts[int(arg[d])]
        out.append(c)
        d -= c.dsp
    return out[::-1]


def _cheapest(options: list[list[Choice]], rate: int, fixed: Area, budget: Budget) -> list[Choice] | None:
    """The cheapest choice per stage meeting ``rate`` within the budget, or None: with every product on DSPs
    (``_on_dsps``) where that fits; else, where the DSP budget is what stops it, some MAC stages' products in
    LUTs (multiplier "lut"): the picks with the fewest LUTs within the DSP budget (a knapsack), if they keep
    within the BRAM18 and LUT budgets."""
    allowed = [[c for c in opts if c.cycles <= rate] for opts in options]
    if any(not a for a in allowed):
        return None
    # where LUT products beat every DSP choice (packed or not) that meets the rate, they stand in
    pick = _on_dsps([[c for c in a if c.multiplier != "lut"] or a for a in allowed], fixed, budget)
    if pick is not None or budget.dsp is None or all(c.multiplier != "lut" for a in allowed for c in a):
        return pick
    pick = _knapsack(allowed, budget.dsp - fixed.dsp, "lut")
    return pick if pick is not None and _fits(pick, fixed, budget) else None


def _fits(pick: list[Choice], fixed: Area, budget: Budget) -> bool:
    """Whether ``pick`` (and ``fixed``) keep within every resource budget given."""
    return all(limit is None or getattr(fixed, f) + sum(getattr(c, f) for c in pick) <= limit
               for f, limit in (("dsp", budget.dsp), ("bram18", budget.bram18), ("lut", budget.lut)))


def _on_dsps(allowed: list[list[Choice]], fixed: Area, budget: Budget) -> list[Choice] | None:
    """The cheapest choice per stage of ``allowed`` within the budget (fewest DSPs, then BRAM18s, then LUTs),
    or None. A LUT budget: those picks if they keep within it, else the fewest LUTs per stage."""
    pick = _cheapest_dsp_bram(allowed, fixed, budget)
    if budget.lut is None or (pick is not None and fixed.lut + sum(c.lut for c in pick) <= budget.lut):
        return pick
    pick = [min(a, key=lambda c: (c.lut, c.dsp, c.bram18)) for a in allowed]
    return pick if _fits(pick, fixed, budget) else None


def _cheapest_dsp_bram(allowed: list[list[Choice]], fixed: Area, budget: Budget) -> list[Choice] | None:
    """The cheapest choice per stage of ``allowed`` within the DSP and BRAM18 budgets, or None."""
    pick = [min(a, key=lambda c: (c.dsp, c.bram18, c.lut)) for a in allowed]
    dsp = fixed.dsp + sum(c.dsp for c in pick)
    bram = fixed.bram18 + sum(c.bram18 for c in pick)
    if budget.dsp is not None and dsp > budget.dsp:
        return None
    if budget.bram18 is None or bram <= budget.bram18:
        return pick
    if budget.dsp is None:
        pick = [min(a, key=lambda c: (c.bram18, c.dsp, c.lut)) for a in allowed]
        return pick if fixed.bram18 + sum(c.bram18 for c in pick) <= budget.bram18 else None
    pick = _knapsack(allowed, budget.dsp - fixed.dsp)
    if pick is None or fixed.bram18 + sum(c.bram18 for c in pick) > budget.bram18:
        return None
    return pick


def _port_choices(plan: DataflowPlan, free: bool) -> dict[str, list[int]]:
    """Graph input or output tensor -> the lanes its port may take, fewest first: its own when ``free`` is
    False (the user gave them), else every count ``check_port`` allows."""
    out = {}
    for p in (*plan.inputs, *plan.outputs):
        allowed = []
        for lanes in _divisors(p.type.shape[-1] if p.type.shape else 1) if free else [p.lanes]:
            try:
                check_port(p.tensor, p.type, lanes)
            except HlsfuseError:
                continue
            allowed.append(lanes)
        out[p.tensor] = allowed
    return out


def _fmt(c: Choice) -> str:
    return ", ".join(f"{k} {v}" for k, v in (("simd", c.simd), ("lanes", c.lanes), ("pe", c.pe),
                                               ("snapshots", c.snapshots), ("multiplier", c.multiplier))
                     if v not in (None, 1, "dsp"))


def _trim(graph: Graph, fusion: FusionPlan, plan: DataflowPlan, stage, c: Choice, rate: int, dsp: Dsp) -> Choice:
    """``c`` with the fewest snapshots that still meet ``rate`` (they cost registers, and no DSP or BRAM18)."""
    if c.snapshots == 1:
        return c
    schedule = refold(graph, fusion, plan, stage, c.simd, c.lanes, c.pe, multiplier=c.multiplier, dsp=dsp).schedule
    return replace(c, snapshots=schedule.main.engine.fewest_slots(rate - schedule.setup_iterations))


@dataclass(frozen=True, eq=False)
class Space:
    """What the solver chooses from, whatever the budget: the unfolded plan, the stages it folds with their
    choices (``choices``, shared by stages alike), and the lanes each port may take. Computing the choices is
    most of a solve; a sweep over budgets (hlsfuse explore) builds the space once and fits it many times."""

    graph: Graph
    fusion: FusionPlan
    options: LowerOptions
    dsp: Dsp
    plan: DataflowPlan
    folded: tuple  # the plan's stages of the FOLDABLE kinds
    choices: tuple[tuple[Choice, ...], ...]  # per stage of ``folded``
    ports: Mapping[str, list[int]]  # graph input or output tensor -> the lanes it may take, fewest first
    sizes: Mapping[str, int]  # graph input or output tensor -> elements per frame
    lowered: dict = field(default_factory=dict, repr=False)  # Folding -> its plan: budgets near each other often
    # fold alike (ResNet-8 at 100 DSP budgets from 20 to 2000: 38 foldings), and lowering is most of a fit

    def lower(self, fold: Folding) -> DataflowPlan:
        if fold not in self.lowered:
            self.lowered[fold] = lower(self.graph, self.fusion, replace(self.options, fold=fold))
        return self.lowered[fold]


def space(graph: Graph, fusion: FusionPlan, options: LowerOptions, dsp: Dsp, free_ports: bool = True) -> Space:
    """The solver's choices for ``graph`` fused as ``fusion`` (ports keep ``options``' lanes unless
    ``free_ports``); its plans are lowered for ``dsp`` (packed products are shaped for it)."""
    options = replace(options, dsp=dsp)
    plan = lower(graph, fusion, options)
    folded = tuple(s for s in plan.stages if s.kind in FOLDABLE)
    alike: dict[tuple, tuple[Choice, ...]] = {}
    options_per_stage = tuple(alike[key] if (key := _structure(graph, s)) in alike else alike.setdefault(
        key, tuple(choices(graph, fusion, plan, s, dsp))) for s in folded)
    sizes = {p.tensor: p.type.size for p in (*plan.inputs, *plan.outputs)}
    return Space(graph, fusion, options, dsp, plan, folded, options_per_stage, _port_choices(plan, free_ports), sizes)


def solve(space: Space, budget: Budget, plan: DataflowPlan | None = None) -> Folding:
    """The folding of the space's map, window, rows, reduce and own stages (and ports) for ``budget``: every stage
    by its head node (a map stage: its last), every port by tensor. ``plan`` (default: the space's) is the plan
    whose FIFOs and unfolded stages are counted."""
    graph, folded, options, ports, sizes = space.graph, space.folded, list(space.choices), space.ports, space.sizes
    plan = plan or space.plan
    areas, fifos, _ = design_area(graph, plan, space.dsp)
    fixed = sum((areas[s.name] for s in plan.stages if s.kind not in FOLDABLE), fifos)
    floor = max(sizes[t] // lanes[-1] for t, lanes in ports.items())  # the ports at their widest
    where = f"budget {budget.text()}"
    if budget.dsp is not None and fixed.dsp > budget.dsp:
        raise HlsfuseError(f"{where}: the stages without MACs already need {fixed.dsp} DSPs")
    if budget.bram18 is not None and fixed.bram18 > budget.bram18:
        worst = max(plan.stages, key=lambda s: areas[s.name].bram18)
        raise HlsfuseError(f"{where}: the design needs {fixed.bram18} BRAM18s before any MAC stage "
                           f"(FIFOs {fifos.bram18}, stage {worst.name} {areas[worst.name].bram18})")
    if budget.cycles is not None:
        for s, opts in zip(folded, options):
            if opts[-1].cycles > budget.cycles:
                raise HlsfuseError(f"{where}: stage {s.name} needs at least {opts[-1].cycles} cycles per frame "
                                   f"(folded as wide as it goes: {_fmt(opts[-1]) or 'one element per cycle'})")
        if floor > budget.cycles:
            port = max(ports, key=lambda t: sizes[t] // ports[t][-1])
            raise HlsfuseError(f"{where}: port '{port}' takes {floor} cycles per frame at its widest "
                               f"({ports[port][-1]} lanes)")
        rate = budget.cycles
    else:
        rates = sorted({c.cycles for opts in options for c in opts if c.cycles >= floor} | {floor})
        if _cheapest(options, rates[-1], fixed, budget) is None:
            least = {f: getattr(fixed, f) + sum(min(getattr(c, f) for c in opts) for opts in options)
                     for f in ("dsp", "bram18", "lut")}
            over = [(f, u) for f, u in (("dsp", "DSPs"), ("bram18", "BRAM18s"), ("lut", "LUTs"))
                    if getattr(budget, f) is not None and least[f] > getattr(budget, f)]
            field, unit = over[0] if over else ("bram18", "BRAM18s")
            need = [(min(getattr(c, field) for c in opts), s) for s, opts in zip(folded, options)]
            total = getattr(fixed, field) + sum(d for d, _ in need)
            worst_need, worst = max(need, key=lambda p: p[0])
            raise HlsfuseError(f"{where}: does not fit: folded as far as it goes the design needs {total} {unit}; "
                               f"stage {worst.name} alone needs {worst_need}")
        lo, hi = 0, len(rates) - 1  # binary search for the first feasible rate
        while lo < hi:
            mid = (lo + hi) // 2
            if _cheapest(options, rates[mid], fixed, budget) is None:
                lo = mid + 1
            else:
                hi = mid
        rate = rates[lo]
    pick = _cheapest(options, rate, fixed, budget)
    if pick is None:
        raise HlsfuseError(f"{where}: no folding meets {budget.cycles} cycles per frame within the budget")
    pick = [_trim(graph, space.fusion, plan, s, c, rate, space.dsp) for s, c in zip(folded, pick)]
    keys = [s.head or s.sink for s in folded]  # a node of the stage: node names are never ambiguous
    return Folding(simd=tuple((k, c.simd) for k, c in zip(keys, pick) if c.simd is not None),
                   lanes=tuple((k, c.lanes) for k, c in zip(keys, pick) if c.lanes != 1),
                   pe=tuple((k, c.pe) for k, c in zip(keys, pick) if c.pe != 1),
                   snapshots=tuple((k, c.snapshots) for k, c in zip(keys, pick) if c.snapshots != 1),
                   multipliers=tuple((k, c.multiplier) for k, c in zip(keys, pick) if c.multiplier != "dsp"),
                   ports=tuple((t, next(ll for ll in lanes if sizes[t] // ll <= rate)) for t, lanes in ports.items()))


def fit(space: Space, budget: Budget) -> DataflowPlan:
    """The space's plan folded by ``solve`` for ``budget``. The FIFOs and converters of the folded plan are
    counted again: if they take it over the BRAM18 or LUT budget, it is solved again with the excess taken off
    (the FIFOs the solver counts stay the unfolded plan's: the smaller margin is what pays for their growth).
    Converters cost more or fewer LUTs than the choices price them at (each as if up from one lane), so when a
    smaller margin leaves the folding as it was, the next solve aims at a slower rate (a quarter slower each time,
    unless the budget gives the cycles), which narrows the stages and the converters between them."""
    margin, last = budget, None
    for _ in range(12):
        fold = solve(space, margin)
        folded = space.lower(fold)
        total = design_area(space.graph, folded, space.dsp)[2]
        over = {f: getattr(total, f) - getattr(budget, f) for f in ("bram18", "lut") if getattr(budget, f) is not None}
        if all(v <= 0 for v in over.values()):
            return folded
        stuck = fold == last and budget.cycles is None
        slower = {"cycles": folded.cycles + max(1, folded.cycles // 4)} if stuck else {}
        margin = replace(margin, **{f: max(0, getattr(margin, f) - v) for f, v in over.items() if v > 0}, **slower)
        last = fold
    worst = max(over, key=lambda f: over[f] / max(1, getattr(budget, f)))
    raise HlsfuseError(f"budget {budget.text()}: the folded design's FIFOs and converters keep it over "
                       f"{getattr(budget, worst)} {'BRAM18s' if worst == 'bram18' else 'LUTs'}")


BUDGETS = {"dsp": "DSPs", "bram18": "BRAM18s", "lut": "LUTs"}
"""The resource budgets the solver folds within, by Budget field, and what they count."""


def binding(space: Space, budget: Budget, plan: DataflowPlan) -> tuple[str, ...]:
    """The budgets (``BUDGETS`` keys) that hold ``plan``, the space's folding for ``budget``, at its cycles per
    frame: each one without which ``fit`` folds the design faster. None of them (a target rate given, or the
    slowest stage or port as fast as it folds) is ``()``; two can bind together."""
    if budget.cycles is not None:
        return ()
    out = []
    for name in BUDGETS:
        if getattr(budget, name) is None:
            continue
        try:
            faster = fit(space, replace(budget, **{name: None})).cycles < plan.cycles
        except HlsfuseError:  # the others alone do not fit either: this one is not what holds it
            faster = False
        if faster:
            out.append(name)
    return tuple(out)


def within(budget: Budget, plan: DataflowPlan, areas: Mapping[str, Area], total: Area, what: str) -> None:
    """Refuse a plan over ``budget``, naming the stage that needs the most of what is exceeded."""
    for name, limit, unit in (("dsp", budget.dsp, "DSPs"), ("bram18", budget.bram18, "BRAM18s"),
                              ("lut", budget.lut, "LUTs")):
        need = getattr(total, name)
        if limit is not None and need > limit:
            worst = max(plan.stages, key=lambda s: getattr(areas[s.name], name))
            raise HlsfuseError(f"budget {budget.text()}: {what} needs {need} {unit}, more than {limit}; stage "
                               f"{worst.name} needs {getattr(areas[worst.name], name)}")
    if budget.cycles is not None and plan.cycles > budget.cycles:
        slow = max(plan.stages, key=lambda s: s.cycles)
        raise HlsfuseError(f"budget {budget.text()}: {what} takes {plan.cycles} cycles per frame, more than "
                           f"{budget.cycles}; stage {slow.name} takes {slow.cycles}")


def fold_json(graph: Graph, plan: DataflowPlan) -> dict:
    """OUT/fold.json: the folding of every MAC, window and reduce stage (by head node) and map stage (by its last
    node), and the lanes of every port (by tensor); editable, and read back by --fold."""
    stages = {}
    for s in plan.stages:
        main, factors = s.schedule.main, s.schedule.factors
        if s.kind in ("fork", "convert"):
            continue
        entry = {"stage": s.name, **factors.spelled(s.kind)}  # the factors, then figures beside them
        if s.kind == "window":
            entry.update(in_channels=main.geometry.c, out_channels=main.out_channels)
        elif s.kind == "rows":
            entry.update(k=main.k, n=main.n)
        else:
            source = graph.types[graph.node(s.head).inputs[0]].shape if s.head else graph.types[s.sink].shape
            entry.update(innermost=source[-1] if source else 1)
        if factors.simd is not None:
            entry.update(products=main.products)
        if s.kind in ("reduce", "own"):
            entry.update(lanes_out=factors.lanes_out)
        stages[s.head or s.sink] = {**entry, "cycles": s.cycles}
    ports = {p.tensor: p.lanes for p in (*plan.inputs, *plan.outputs)}
    return {"graph": graph.name, "fold": stages, "ports": ports}


def _positive(path: str, where: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HlsfuseError(f"{path}: {where} must be a positive integer, not {value!r}")
    return value


FACTORS = ("simd", "pe", "lanes", "snapshots", "multiplier")
"""The factors a fold.json entry may give: simd (conv2d, dense, matmul), pe (conv2d, pools, dense, matmul), lanes
(map stages: elements per token; window stages: input channels per push; rows stages: row elements per push;
reduce stages: input elements per iteration), snapshots (window stages: completed windows held for emission),
multiplier (conv2d, dense, matmul: "dsp", "lut" or "packed", schedule.MULTIPLIERS)."""


def read_fold(path: str) -> Folding:
    """The folding in a fold.json file (``fold_json``'s format; the figures beside the factors are ignored)."""
    check_readable(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise HlsfuseError(f"{path}: cannot read the folding: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise HlsfuseError(f"{path}: not a JSON folding ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("fold"), dict):
        raise HlsfuseError(f"{path}: a folding is an object with a 'fold' object (node name -> {{\"simd\": N}}, "
                           f"{{\"pe\": N}} or {{\"lanes\": N}})")
    found: dict[str, list[tuple[str, int | str]]] = {f: [] for f in FACTORS}
    for key, entry in data["fold"].items():
        factors = [f for f in FACTORS if isinstance(entry, dict) and f in entry]
        if not factors:
            raise HlsfuseError(f"{path}: fold entry '{key}' must be an object with 'simd' (conv2d, dense, matmul), "
                               "'pe' (conv2d, pools, dense, matmul), 'lanes' (map stages, and a window, rows or "
                               "reduce stage's input), 'snapshots' (window stages) or 'multiplier' (conv2d, dense, "
                               "matmul)")
        for f in factors:
            if f == "multiplier":
                if entry[f] not in MULTIPLIERS:
                    raise HlsfuseError(f"{path}: fold entry '{key}': multiplier must be one of "
                                       f"{', '.join(map(repr, MULTIPLIERS))}, not {entry[f]!r}")
                found[f].append((key, entry[f]))
            else:
                found[f].append((key, _positive(path, f"fold entry '{key}': {f}", entry[f])))
    ports = data.get("ports", {})
    if not isinstance(ports, dict):
        raise HlsfuseError(f"{path}: 'ports' must be an object (graph input or output -> lanes)")
    return Folding(simd=tuple(found["simd"]), lanes=tuple(found["lanes"]), pe=tuple(found["pe"]),
                   snapshots=tuple(found["snapshots"]), multipliers=tuple(found["multiplier"]),
                   ports=tuple((k, _positive(path, f"port '{k}'", v)) for k, v in ports.items()))
