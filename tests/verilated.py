"""Verilator models of hw/rtl modules for the RTL unit tests, built with pyverilator and cached.

    model(top, **params)     a PyVerilator simulation of ``top`` (an hw/rtl module name, or a test top
                             in tests/rtl/), with its parameters overridden; hw/rtl is on the search path
    Clocked(sim)             drives ap_clk/ap_rst_n: reset(), tick()
    Source(data, rng, p)     a stream source that offers elements at random and holds them until taken
    pump(sim, data, ...)     stream data through a 1-in 1-out module under random valid/ready patterns
    mem_file(text)           a $readmemh file with this content, at a path derived from the content

A build takes seconds, so models are cached, keyed by a hash of everything that goes into them
(the Verilog sources, the parameters, the tool versions); a rerun loads the shared object of the
earlier build. The cache is hlsfuse's own (``hlsfuse.sim.cache``: ``$XDG_CACHE_HOME/hlsfuse/rtl``),
whose entries are built aside, sealed and renamed into place, so concurrent test runs never load a
half-built model and a damaged one is rebuilt.
"""

from __future__ import annotations

import hashlib
import tempfile
from importlib.metadata import version
from pathlib import Path

from hlsfuse.resources import hw_dir
from hlsfuse.sim import cache
from hlsfuse.sim.verilator import verilator_version

RTL = hw_dir() / "rtl"
TB = Path(__file__).parent / "rtl"


def cache_root() -> Path:
    return cache.root("rtl")


def _tools() -> str:
    return f"{verilator_version()} pyverilator-mm {version('pyverilator-mm')}"


def source(top: str) -> Path:
    """The file defining module ``top``: a test top in tests/rtl/ or a module of hw/rtl/."""
    for folder in (TB, RTL):
        if (folder / f"{top}.v").is_file():
            return folder / f"{top}.v"
    raise FileNotFoundError(f"no module {top!r} in {TB} or {RTL}")


def _param(name: str, value) -> str:
    if isinstance(value, str):
        return f'-G{name}="{value}"'
    return f"-G{name}={int(value)}"


def model(top: str, **params):
    """A pyverilator model of module ``top`` with ``params`` overriding its parameters.

    Parameter values are ints, strings, or Verilog literals given as ``("48'h...",)`` tuples.
    """
    import pyverilator

    args = [(f"-G{k}={v[0]}" if isinstance(v, tuple) else _param(k, v)) for k, v in sorted(params.items())]
    digest = hashlib.sha256(_tools().encode())
    digest.update(repr((top, args)).encode())
    for path in [source(top), *sorted(RTL.glob("*.v"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())

    def build(scratch: Path) -> None:
        pyverilator.PyVerilator.build(
            str(source(top)), verilog_path=[str(RTL)], build_dir=str(scratch), quiet=True,
            args=args, cargs="-O1", dump_en=False,  # -O1 builds faster than the default -Os
        )

    library, _ = cache.entry(cache_root() / f"{top}-{digest.hexdigest()[:20]}", f"V{top}", build)
    return pyverilator.PyVerilator(str(library))


class Clocked:
    """Clock and reset for a model with ``ap_clk`` and ``ap_rst_n``; ``cycle`` counts rising edges."""

    def __init__(self, sim):
        self.sim = sim
        self.io = sim.io
        self.cycle = 0

    def tick(self) -> None:
        self.io.ap_clk = 1
        self.io.ap_clk = 0
        self.cycle += 1

    def reset(self, cycles: int = 2) -> None:
        self.io.ap_rst_n = 0
        for _ in range(cycles):
            self.tick()
        self.io.ap_rst_n = 1
        self.cycle = 0


class Source:
    """Offers ``data`` in order; once valid, holds the element until it is taken."""

    def __init__(self, data, rng, p_valid: float):
        self.data, self.rng, self.p_valid = list(data), rng, p_valid
        self.index, self.valid = 0, False

    def offer(self) -> tuple[int, int]:
        if not self.valid and self.index < len(self.data):
            self.valid = self.rng.random() < self.p_valid
        return int(self.valid), (self.data[self.index] if self.valid else 0)

    def taken(self) -> None:
        self.index, self.valid = self.index + 1, False


def pump(sim, data, rng, p_valid: float, p_ready: float, count: int | None = None, max_cycles: int = 100000):
    """Stream ``data`` into in_* and collect ``count`` (default len(data)) elements from out_*.

    Sink readiness is random with probability ``p_ready``. Checks the AXI4-Stream rule that a
    valid output keeps its data until it is taken. Returns (received, cycles); the model is reset first.
    """
    clk, io = Clocked(sim), sim.io
    clk.reset()
    src = Source(data, rng, p_valid)
    count = len(data) if count is None else count
    received, held = [], None
    while len(received) < count:
        assert clk.cycle < max_cycles, f"no progress: {len(received)} of {count} received"
        io.in_tvalid, io.in_tdata = src.offer()
        ready = int(rng.random() < p_ready)
        io.out_tready = ready
        out_valid, out_data = io.out_tvalid.value, io.out_tdata.value
        if held is not None:
            assert out_valid and out_data == held, f"cycle {clk.cycle}: a valid output changed before it was taken"
        if out_valid and ready:
            received.append(out_data)
        held = out_data if out_valid and not ready else None
        if src.valid and io.in_tready.value:
            src.taken()
        clk.tick()
    return received, clk.cycle


def mem_file(text: str) -> Path:
    """A file holding ``text`` (ROM contents), named by its hash so that model caching sees the contents."""
    folder = cache_root() / "mem"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}.mem"
    if not path.is_file():
        scratch = Path(tempfile.mkstemp(dir=folder, suffix=".tmp")[1])
        scratch.write_text(text)
        scratch.replace(path)
    return path


def pack_configs(configs) -> str:
    """Per-instance parameter tuples as one Verilog literal: 8 bits a field, 48 bits an instance."""
    value = 0
    for c, fields in enumerate(configs):
        for f, field in enumerate(fields):
            value |= field << (48 * c + 8 * f)
    return f"{48 * len(configs)}'h{value:x}"


def unpack(bits: int, width: int, signed: int, n: int) -> list[int]:
    """The ``n`` elements of ``width`` bits packed in ``bits`` (element 0 lowest)."""
    out = []
    for i in range(n):
        v = (bits >> (i * width)) & ((1 << width) - 1)
        out.append(v - (1 << width) if signed and v >> (width - 1) else v)
    return out
