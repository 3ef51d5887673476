"""Fork stages in Verilog: one ``hlsf_fork`` copying the input channel to every output channel."""

from __future__ import annotations

from ...errors import HlsfuseError
from ...lower.plan import Stage
from ..hls.context import Context
from .module import ModuleWriter, StageModule

__all__ = ["build"]


def build(ctx: Context, stage: Stage, w: ModuleWriter) -> StageModule:
    if len(stage.inputs) != 1 or not stage.outputs:
        raise HlsfuseError(f"fork stage '{stage.name}' must read one channel and write at least one")
    src = stage.inputs[0]
    width = w.width(ctx.channel(src).tensor)
    n = len(stage.outputs)
    outs = list(reversed(stage.outputs))  # bit k of the fork's vectors is output k
    data = w.fresh("copy")
    w.decls.append(f"wire [{width - 1}:0] {data};")
    valid, ready = w.fresh("tvalid"), w.fresh("tready")
    w.decls.append(f"wire [{n - 1}:0] {valid};")
    w.decls.append(f"wire [{n - 1}:0] {ready} = {{{', '.join(f'{c}_tready' for c in outs)}}};")
    w.rtl.add("hlsf_fork")
    w.decls.append(
        f"hlsf_fork #(.WIDTH({width}), .N({n})) {w.fresh('u_fork')} (.ap_clk(ap_clk), .ap_rst_n(ap_rst_n), "
        f".in_tdata({src}_tdata), .in_tvalid({src}_tvalid), .in_tready({src}_tready), "
        f".out_tdata({data}), .out_tvalid({valid}), .out_tready({ready}));"
    )
    for k, c in enumerate(stage.outputs):
        w.decls.append(f"assign {c}_tdata = {data};")
        w.decls.append(f"assign {c}_tvalid = {valid}[{k}];")
    w.decls.append(f"assign busy = {src}_tvalid && {src}_tready;")
    w.decls.append(f"assign stall = {src}_tvalid && !{src}_tready;")
    return w.build("fork", f"copies '{ctx.channel(src).tensor}' to {n} readers")
