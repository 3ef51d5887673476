"""The push/emit loop of window and rows stages, and how a MAC stage folds its products.

The push/emit loop overlaps reading and writing: a push that completes a window (or a row) copies
it into the snapshot, which the next iterations emit from, one output per iteration, while later
pushes proceed. Only the push completing the *next* window waits, until the snapshot's last
output goes out in the same iteration:

    pushes   p p p P p p p P . . p P          P: completes a window (a unit)
    emits     . . . e e e e e e e e e e e      (units of 4 emits)

so a stage takes about max(pushes, emits) iterations, not their sum, and strided windows spread
their emission over the positions in between. A window stage may hold a ring of Q snapshots
(``WindowMain.snapshots``): a completing push then waits only while all Q are held, so that the
windows a strided stage completes on one row are emitted while the next row is pushed (``Engine``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from ..errors import HlsfuseError

__all__ = ["Engine", "Folded", "Streamed", "check_simd"]


@dataclass(frozen=True)
class Engine:
    """``pushes`` per frame; push ``completes[m]`` completes unit m, which is captured into one of ``slots``
    snapshots and then emits for ``emits`` iterations: ``emits / folds`` outputs, each computed over ``folds``
    iterations and written in its last. Units emit one after another, each from the iteration after its
    capture at the soonest; a capture needs a free snapshot, and unit m's is unit m - slots's, free in the
    iteration of that unit's last emit (which reads it before the capture overwrites it)."""

    pushes: int
    completes: tuple[int, ...]
    emits: int
    folds: int = 1
    slots: int = 1

    @cached_property
    def units(self) -> tuple[np.ndarray, np.ndarray]:
        """(iteration of each unit's capture, iteration of its first emit).

        A completing push is delayed as much as the pushes before it, and more while its snapshot is busy:
        capture[m] = max(capture[m-1] + completes[m] - completes[m-1], first[m - slots] + emits - 1); the
        pushes between two captures follow the earlier one. Emission is serial: first[m] = max(capture[m] + 1,
        first[m-1] + emits). With one slot the capture waits for the previous unit's last emit, so
        capture[m] = capture[m-1] + max(completes[m] - completes[m-1], emits) in closed form; with a slot per
        unit no push waits."""
        done = np.asarray(self.completes, dtype=np.int64)
        e, n = self.emits, len(done)
        if self.slots == 1:
            capture = done + np.concatenate([[0], np.cumsum(np.maximum(0, e - np.diff(done)))])
        elif self.slots >= n or e == 0 or self.slots >= replace(self, slots=n).waiting:
            capture = done
        else:
            q, cap, first = self.slots, [0] * n, [0] * n
            gaps = np.diff(done, prepend=done[:1]).tolist()
            for m in range(n):
                t = cap[m - 1] + gaps[m] if m else int(done[0])
                if m >= q:
                    t = max(t, first[m - q] + e - 1)
                cap[m] = t
                first[m] = max(t + 1, first[m - 1] + e) if m else t + 1
            return np.asarray(cap, dtype=np.int64), np.asarray(first, dtype=np.int64)
        k = np.arange(n, dtype=np.int64)
        return capture, k * e + np.maximum.accumulate(capture + 1 - k * e)

    @cached_property
    def timing(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(iteration of each push, iteration of each emit, iterations per frame)."""
        done = np.asarray(self.completes, dtype=np.int64)
        capture, first = self.units
        j = np.arange(self.pushes, dtype=np.int64)
        units_so_far = np.searchsorted(done, j, side="right")
        delay = capture - done
        push = j + np.where(units_so_far > 0, delay[np.maximum(units_so_far - 1, 0)], 0)
        emit = (first[:, None] + np.arange(self.emits, dtype=np.int64)).reshape(-1)
        total = int(max(push[-1] + 1, emit[-1] + 1 if emit.size else 0))
        return push, emit, total

    @cached_property
    def iterations(self) -> int:
        """``timing``'s iterations per frame without its arrays: the pushes after the last capture keep its delay
        D, so max(pushes + D, first[-1] + emits)."""
        done = np.asarray(self.completes, dtype=np.int64)
        if not done.size:
            return self.pushes
        capture, first = self.units
        last = int(first[-1]) + self.emits if self.emits else 0
        return max(self.pushes + int(capture[-1] - done[-1]), last)

    def fewest_slots(self, rate: int | None = None) -> int | None:
        """The fewest snapshots with which the frame takes at most ``rate`` iterations (None: as few as with
        a snapshot per unit); None when no number of them does. Iterations never grow with slots, and from
        the most units ever waiting for their emission in the run with a slot per unit (``waiting``) on they
        stay the same, so a search below that finds it: doubling from 2, then halving the last step."""
        free = replace(self, slots=max(1, len(self.completes)))
        rate = free.iterations if rate is None else rate
        if free.iterations > rate:
            return None
        if replace(self, slots=1).iterations <= rate:
            return 1
        lo, q, most = 2, 2, free.waiting
        while q < most and replace(self, slots=q).iterations > rate:
            lo, q = q + 1, 2 * q
        hi = min(q, most)
        while lo < hi:
            mid = (lo + hi) // 2
            if replace(self, slots=mid).iterations <= rate:
                hi = mid
            else:
                lo = mid + 1
        return lo

    @cached_property
    def fastest_slots(self) -> int:
        """``fewest_slots()``: the fewest snapshots for the fastest rate."""
        return self.fewest_slots()

    @property
    def waiting(self) -> int:
        """The most units held at a capture (the one captured, and those captured before it whose last emit
        comes later): snapshots enough that no push waits."""
        done = np.asarray(self.completes, dtype=np.int64)
        if not done.size or not self.emits:
            return 1
        capture, first = self.units
        freed = np.searchsorted(first + self.emits - 1, capture, side="right")  # units whose last emit is done by then
        return int(max(1, (np.arange(len(done)) - freed + 1).max()))

    @property
    def writes(self) -> np.ndarray:
        """The iteration of each output written: the last fold of each."""
        return self.timing[1][self.folds - 1::self.folds]


class Folded:
    """A MAC stage's folding (mixed into WindowMain and RowsMain, which give ``simd``, ``products`` and
    ``strided``): each output's ``products`` products are computed ``simd`` per iteration (its
    multipliers), over ``folds`` = products / simd iterations; lane s of fold f computes product
    ``product(f, s)``: s * folds + f when ``strided`` (conv2d and matmul, whose weights are banked in
    blocks), else f * simd + s (dense, banked cyclically), so that the lanes of one fold read ``simd``
    different banks of the weights."""

    @property
    def folds(self) -> int:
        return self.products // self.simd

    def product(self, fold: int, lane: int) -> int:
        return lane * self.folds + fold if self.strided else fold * self.simd + lane


def check_simd(where: str, simd: int, products: int) -> None:
    if not isinstance(simd, int) or isinstance(simd, bool) or simd < 1 or products % simd:
        raise HlsfuseError(f"{where}: simd must be a divisor of its {products} products per output, not {simd!r}")


@dataclass(frozen=True)
class Streamed:
    """A folded dense stage of one row per frame: its ``pushes`` (tokens of ``lanes`` row elements), one per
    iteration from iteration 0, and its ``outputs`` x ``folds`` emits in fold-major order (fold f of every
    output token, then fold f + 1), each adding ``simd`` products per lane to its outputs' accumulators. Fold f
    needs row elements up to (f+1) x simd - 1, in push ceil((f+1) x simd / lanes) - 1, so its first emit waits
    until that push is done (in an earlier iteration); the outputs are written in the last fold. Emitting
    while the row is read hides the row's pushes that a snapshot would wait for."""

    pushes: int
    outputs: int  # emits per fold: output tokens (N / PE)
    folds: int
    simd: int
    lanes: int = 1  # row elements per push

    @cached_property
    def timing(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(iteration of each push, iteration of each emit, iterations per frame): emit e of fold f goes
        out at e + max over f' <= f of (ceil((f' + 1) x simd / lanes) - f' x outputs), one per iteration."""
        f = np.arange(self.folds, dtype=np.int64)
        need = -(-(f + 1) * self.simd // self.lanes)  # pushes done before fold f's first emit
        lead = np.maximum.accumulate(need - f * self.outputs)
        e = np.arange(self.outputs * self.folds, dtype=np.int64)
        emit = e + lead[e // self.outputs]
        push = np.arange(self.pushes, dtype=np.int64)
        return push, emit, int(max(self.pushes, emit[-1] + 1))

    @property
    def iterations(self) -> int:
        return self.timing[2]

    @property
    def writes(self) -> np.ndarray:
        return self.timing[1][(self.folds - 1) * self.outputs:]


