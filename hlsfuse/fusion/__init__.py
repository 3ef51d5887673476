"""Operator fusion: TVM's post-dominator algorithm, in a TVM mode and an FPGA streaming mode.

    graph --forward.build--> ForwardGraph --postdom.build--> PostDomTree
          --partition--> Partition --make_plan--> FusionPlan

``fuse`` runs the whole chain; docs/fusion.md explains the algorithm, the
modes and the report.
"""

from __future__ import annotations

from .. import collector
from ..errors import HlsfuseError
from ..ir import Graph
from . import forward, postdom
from .evaluate import run, run_raw
from .modes import MODES, barrier_rule
from .partition import partition
from .plan import FusionPlan, Group, make_plan, stats, verify

__all__ = ["fuse", "FusionPlan", "Group", "verify", "stats", "run", "run_raw", "MODES"]


def fuse(graph: Graph, mode: str = "fpga", max_fuse_depth: int = 256, opt_level: int = 2) -> FusionPlan:
    """Partition ``graph`` into fused groups.

    ``mode``: ``"fpga"`` (default; ops that cannot stream stay alone) or ``"tvm"``
    (TVM's rules unchanged). ``max_fuse_depth``: most ops in one group (TVM's count).
    ``opt_level``: 0 puts every op in its own group; 1 and 2 fuse (as in TVM).
    """
    barrier = barrier_rule(mode)
    if isinstance(max_fuse_depth, bool) or not isinstance(max_fuse_depth, int) or max_fuse_depth < 1:
        raise HlsfuseError(f"max_fuse_depth must be a positive integer, not {max_fuse_depth!r}")
    if opt_level not in (0, 1, 2) or isinstance(opt_level, bool):
        raise HlsfuseError(f"opt_level must be 0, 1 or 2, not {opt_level!r}")
    with collector.paused():  # fusion creates no reference cycles
        fg = forward.build(graph, barrier)
        tree = postdom.build(fg)
        part = partition(fg, tree, max_fuse_depth, opt_level)
        return make_plan(graph, fg, tree, part, mode, max_fuse_depth, opt_level)

