"""Token timing of a dataflow plan: cycles per frame, latency and FIFO depths from the stages' schedules.

Every stage, and every AXI4-Stream port, is an *actor* that runs iterations in a fixed order, one
per cycle at most; iteration g fires at the first cycle at which every token it reads is in its
channel and every channel it writes has space (``Schedule.io`` says which tokens). A FIFO of
depth D (hw/rtl/hlsf_fifo.v) shows a token the cycle after it was written and frees a slot the
cycle after it was read, so with x(a, g) the cycle of actor a's iteration g:

    x(a, g)  >= x(a, g-1) + 1                              one iteration per cycle
    x(a, g)  >= x(producer, write of token k) + 1           for each token k iteration g reads
    x(a, g)  >= x(consumer, read of token k - D) + 1        for each token k iteration g writes

Input ports offer a token on every cycle from cycle 0 and output ports always take one, as rtlsim
drives them. The hardware runs the earliest schedule meeting these constraints. ``replay`` finds
the depths without guessing per kind:

    1. ASAP  the earliest schedule with unbounded FIFOs (one pass in topological order): no design
             delivers its outputs sooner, so its output times are the target.
    2. ALAP  the latest schedule that still delivers every output at its ASAP time (one pass in
             reverse order): producers run just in time, so FIFOs hold only what the schedules
             force them to (a skip connection waiting for its join, the rows a window stage needs).
    3. depth of a channel = the most tokens it holds in the ALAP schedule (at least 2).

With those depths the ALAP schedule is feasible, and the earliest feasible schedule is never later
than a feasible one, so the hardware meets every ASAP output time: it runs at the ASAP rate and
cannot deadlock. Cycles per frame and latency are read off the same replay, so the cost model and
the FIFO sizing cannot disagree. ``simulate`` steps the same rules cycle by cycle with given depths
(an independent check, and what rtlsim must measure).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import HlsfuseError

__all__ = ["Actor", "Link", "Replay", "Simulation", "replay", "simulate", "MIN_DEPTH", "FRAMES"]

MIN_DEPTH = 2  # hlsf_fifo's smallest depth
FRAMES = 3  # frames replayed beyond those the pipeline's latency spans
_LATE = np.int64(1) << 62  # "no deadline"


@dataclass(frozen=True)
class Actor:
    """A stage or a port: ``iterations`` per frame; ``io``: channel -> iteration of each token per frame."""

    name: str
    iterations: int
    io: Mapping[str, np.ndarray] = field(compare=False)


@dataclass(frozen=True)
class Link:
    """A channel between two actors."""

    name: str
    producer: str
    consumer: str
    tokens: int  # per frame


@dataclass(frozen=True)
class Replay:
    depths: dict[str, int]  # the occupancy each channel needs
    cycles: int  # cycles per frame in steady state
    latency: int  # cycles from the first input token to the first output token
    frame_end: tuple[int, ...]  # cycle of each frame's last output token (ASAP)


def _globals(iters: np.ndarray, period: int, frames: int) -> np.ndarray:
    """Per-frame iterations of tokens, for ``frames`` frames in a row."""
    return (np.arange(frames, dtype=np.int64)[:, None] * period + iters[None, :]).reshape(-1)


def _order(actors: Sequence[Actor], links: Sequence[Link]) -> tuple[dict, dict]:
    by_name = {a.name: a for a in actors}
    for link in links:
        for end in (link.producer, link.consumer):
            if end not in by_name:
                raise HlsfuseError(f"channel '{link.name}' connects '{end}', which is no stage or port")
        for end in (link.producer, link.consumer):
            if len(by_name[end].io.get(link.name, ())) != link.tokens:
                raise HlsfuseError(
                    f"'{end}' moves {len(by_name[end].io.get(link.name, ()))} tokens of channel '{link.name}' "
                    f"per frame, not its {link.tokens}"
                )
    return by_name, {link.name: link for link in links}


def _asap(actors, links, by_name, frames, period: int) -> dict[str, np.ndarray]:
    times: dict[str, np.ndarray] = {}
    for actor in actors:  # topological order
        g = np.arange(actor.iterations * frames, dtype=np.int64)
        # frame f starts no sooner than f periods in: no actor can run ahead of the slowest for good
        ready = g // max(actor.iterations, 1) * period
        for link in links:
            if link.consumer != actor.name:
                continue
            producer = by_name[link.producer]
            written = times[producer.name][_globals(producer.io[link.name], producer.iterations, frames)]
            at = _globals(actor.io[link.name], actor.iterations, frames)
            ready[at] = np.maximum(ready[at], written + 1)
        times[actor.name] = np.maximum.accumulate(ready - g) + g
    return times


def _alap(actors, links, by_name, frames, deadline: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    late: dict[str, np.ndarray] = {}
    for actor in reversed(actors):
        if actor.name in deadline:  # an output port: its ASAP times
            late[actor.name] = deadline[actor.name]
            continue
        g = np.arange(actor.iterations * frames, dtype=np.int64)
        due = np.full_like(g, _LATE)
        for link in links:
            if link.producer != actor.name:
                continue
            consumer = by_name[link.consumer]
            read = late[consumer.name][_globals(consumer.io[link.name], consumer.iterations, frames)]
            at = _globals(actor.io[link.name], actor.iterations, frames)
            due[at] = np.minimum(due[at], read - 1)
        late[actor.name] = np.minimum.accumulate((due - g)[::-1])[::-1] + g
    return late


def replay(actors: Sequence[Actor], links: Sequence[Link], outputs: Sequence[str], frames: int | None = None) -> Replay:
    """Depths, cycles per frame and latency of the actors (in topological order) joined by ``links``;
    ``outputs``: the output ports' actors. ``frames``: how many to replay (default: enough for the
    pipeline to fill, FRAMES more than its latency spans, so that the measured frames are steady)."""
    by_name, _ = _order(actors, links)
    period = max(a.iterations for a in actors)
    if frames is None:
        first = _asap(actors, links, by_name, 1, period)
        latency = max(int(first[o][-1]) for o in outputs)
        frames = FRAMES + -(-latency // period)
    early = _asap(actors, links, by_name, frames, period)
    late = _alap(actors, links, by_name, frames, {name: early[name] for name in outputs})
    depths = {}
    for link in links:
        producer, consumer = by_name[link.producer], by_name[link.consumer]
        written = late[producer.name][_globals(producer.io[link.name], producer.iterations, frames)]
        read = late[consumer.name][_globals(consumer.io[link.name], consumer.iterations, frames)]
        measured = link.tokens * (frames - 1)  # the last frame's tail has no later deadline
        k = np.arange(measured, dtype=np.int64)
        held = k + 1 - np.searchsorted(read, written[:measured], side="left")
        depths[link.name] = max(MIN_DEPTH, int(held.max()) if measured else 0)
    ends = []
    for f in range(frames):
        ends.append(max(int(early[o][(f + 1) * by_name[o].iterations - 1]) for o in outputs))
    first_out = min(int(early[o][0]) for o in outputs)
    return Replay(depths, ends[-1] - ends[-2], first_out, tuple(ends))


# --------------------------------------------------------------------------
# Cycle-by-cycle simulation with given depths
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Simulation:
    times: dict[str, np.ndarray]  # per actor: cycle of each iteration that fired
    deadlock: bool
    cycles: int  # cycles simulated
    stalled: tuple[str, ...] = ()  # deadlock: actors that could not fire
    full: tuple[str, ...] = ()  # deadlock: channels that were full


def simulate(actors: Sequence[Actor], links: Sequence[Link], depths: Mapping[str, int], frames: int,
             patience: int = 64, until: int | None = None, inputs: Collection[str] = ()) -> Simulation:
    """Run the actors cycle by cycle for ``frames`` frames with FIFOs of ``depths``; a cycle in which no
    actor fires, ``patience`` times in a row before the end, is a deadlock.

    ``until``: only the ``inputs`` (the input ports' actors) stop after ``frames`` frames; every other
    actor goes on as far as it gets (into the next frame's iterations that need no input, or on and
    on for a stage of constants), and the simulation stops after ``until`` cycles, as an RTL
    simulation stopped at that cycle would: its per-stage iteration counts are the model's."""
    by_name, by_link = _order(actors, links)
    reads_of = {a.name: [c for c in a.io if by_link[c].consumer == a.name] for a in actors}
    written = dict.fromkeys(by_link, 0)  # tokens written before this cycle
    taken = dict.fromkeys(by_link, 0)  # tokens read before this cycle
    done = {a.name: 0 for a in actors}  # iterations fired
    times: dict[str, list[int]] = {a.name: [] for a in actors}
    # per actor and channel: the per-frame iteration of each token, and the next token's index
    plan = {a.name: {c: a.io[c].tolist() for c in a.io} for a in actors}
    nxt = {a.name: dict.fromkeys(a.io, 0) for a in actors}
    endless = until is not None
    total = {a.name: a.iterations * frames if not endless or a.name in inputs else _LATE for a in actors}
    cycle, quiet = 0, 0
    while (cycle < until) if endless else any(done[a.name] < total[a.name] for a in actors):
        fired = []
        for a in actors:
            g = done[a.name]
            if g == total[a.name]:
                continue
            frame, it = divmod(g, a.iterations)
            moves = [(c, nxt[a.name][c]) for c in a.io if nxt[a.name][c] < len(plan[a.name][c])
                     and plan[a.name][c][nxt[a.name][c]] == it]
            ok = True
            for c, j in moves:
                token = frame * by_link[c].tokens + j
                if c in reads_of[a.name]:
                    ok = ok and written[c] > token
                else:
                    ok = ok and written[c] - taken[c] < depths[c]
            if ok:
                fired.append((a, moves))
        for a, moves in fired:
            times[a.name].append(cycle)
            done[a.name] += 1
            for c, _ in moves:
                nxt[a.name][c] += 1
                if c in reads_of[a.name]:
                    taken[c] += 1
                else:
                    written[c] += 1
            if done[a.name] % a.iterations == 0:
                nxt[a.name] = dict.fromkeys(a.io, 0)
        cycle += 1
        quiet = 0 if fired else quiet + 1
        if quiet >= patience and until is None:
            stalled = tuple(a.name for a in actors if done[a.name] < total[a.name])
            full = tuple(c for c in by_link if written[c] - taken[c] >= depths[c])
            return Simulation({k: np.array(v, dtype=np.int64) for k, v in times.items()}, True, cycle, stalled, full)
    return Simulation({k: np.array(v, dtype=np.int64) for k, v in times.items()}, False, cycle)
