"""Static checks of hw/rtl: Verilator -Wall lint (no waivers) over many parameter sets, Icarus, structure.

The generator instantiates these modules with whatever parameters a graph needs, and the issue
requires generated Verilog to lint clean, so each module is linted not only with its defaults but
with the corner cases of its parameters (widths of 1, shifts past the word, non-power-of-two
depths, unsigned variants, dilation...). The ready-path check wires each module's in_tready
straight back to its out_tready (tests/rtl/tb_ready_loop.v): a combinational path from
out_tready to in_tready becomes a combinational loop, which Verilator reports as UNOPTFLAT.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from verilated import RTL, TB

MODULES = sorted(p.stem for p in RTL.glob("*.v"))

# parameter sets linted besides the defaults; every module of hw/rtl must have an entry
SWEEPS: dict[str, list[dict[str, object]]] = {
    "hlsf_fifo": [{"WIDTH": 1, "DEPTH": 2}, {"DEPTH": 3}, {"DEPTH": 16}, {"WIDTH": 64, "DEPTH": 1000}],
    "hlsf_skid": [{"WIDTH": 1}, {"WIDTH": 72}],
    "hlsf_assign": [
        dict(zip(("IN_W", "IN_FRAC", "IN_SIGNED", "OUT_W", "OUT_FRAC", "OUT_SIGNED"), cfg), QUANT=q, OVERFLOW=o)
        for cfg in [(10, 4, 1, 4, 1, 1), (4, 0, 0, 8, 3, 1), (6, 5, 1, 1, 0, 0), (6, 20, 1, 3, -2, 0),
                    (64, 0, 1, 64, 70, 1), (8, 3, 1, 8, 3, 1), (1, 0, 1, 1, 0, 1)]
        for q, o in [(0, 0), (2, 1), (6, 3), (1, 2), (4, 0), (5, 3)]
    ],
    "hlsf_rom": [{"DEPTH": 1}, {"DEPTH": 5, "WIDTH": 90}, {"DEPTH": 1024, "WIDTH": 1}],
    "hlsf_lut": [{"IN_W": 12, "SHIFT": 2}, {"IN_W": 1, "IN_SIGNED": 0}, {"IN_W": 16, "SHIFT": 15, "IN_SIGNED": 0}],
    "hlsf_line_buffer": [
        {"C": 3, "WP": 7}, {"C": 2, "WP": 9, "KH": 2, "KW": 3, "DH": 2, "DW": 2}, {"KH": 1, "KW": 1, "WP": 1},
        {"KH": 1, "KW": 3, "C": 4}, {"KH": 3, "KW": 1, "DH": 3}, {"WIDTH": 1, "C": 1, "WP": 1, "KH": 2, "KW": 1},
        {"C": 2, "WP": 5, "SLOTS": 2}, {"C": 1, "WP": 3, "KH": 1, "KW": 1, "SLOTS": 5},
        {"WIDTH": 32, "C": 2, "WP": 6, "LANES": 4}, {"WIDTH": 16, "C": 8, "WP": 10, "BLOCK": 1},
        {"WIDTH": 24, "C": 3, "WP": 5, "KH": 2, "LANES": 3, "BLOCK": 1},
    ],
    "hlsf_mac": [
        {"N": 9, "ACC_W": 20}, {"A_W": 5, "A_SIGNED": 0, "B_W": 7, "N": 4, "ACC_W": 14},
        {"A_W": 16, "B_W": 16, "A_SIGNED": 0, "B_SIGNED": 0, "ACC_W": 40}, {"A_W": 32, "B_W": 32, "ACC_W": 64, "N": 2},
        {"A_W": 1, "B_W": 1, "ACC_W": 1},
    ],
    "hlsf_divide_const": [
        {"DIVISORS": ("4'd1",)}, {"NUM_W": 10, "SHIFT": 3, "DIVISORS": ("4'd7",)},
        {"NUM_W": 10, "SHIFT": -3, "NUM_SIGNED": 0, "DIVISORS": ("4'd9",)}, {"NUM_W": 6, "SHIFT": -8},
        {"NDIV": 3, "DIVISORS": ("12'h964",)}, {"NDIV": 5, "DIV_W": 5, "DIVISORS": ("25'h1",)},
        {"NUM_W": 55, "SHIFT": 9, "DIV_W": 8, "DIVISORS": ("8'd255",)},
    ],
    "hlsf_reduce": [
        {"OP": 1}, {"N": 9, "ACC_W": 12}, {"N": 9, "ACC_W": 8, "OP": 1, "SIGNED": 0},
        {"DEPTH": 5, "ACC_W": 20, "WIDTH": 16}, {"DEPTH": 16, "OP": 1, "ACC_W": 8}, {"WIDTH": 1, "ACC_W": 1},
    ],
    "hlsf_rsqrt": [{"V_W": 1}, {"V_W": 2}, {"V_W": 3}, {"V_W": 21}, {"V_W": 22}, {"V_W": 40}],
    "hlsf_frame_buffer": [
        {"NDIM": 3, "SHAPE": ("96'h000000040000000200000003",), "STRIDE": ("96'h00000004000000010000000c",)},
        {"NDIM": 1, "SHAPE": ("32'd1",), "STRIDE": ("32'd1",)},
        {"NDIM": 1, "SHAPE": ("32'd7",), "STRIDE": ("32'd1",), "WIDTH": 1},
    ],
}


def _define(name: str, value) -> str:
    return f"{name}={value[0] if isinstance(value, tuple) else int(value)}"


def _lint(path, params: dict) -> subprocess.CompletedProcess:
    command = ["verilator", "--lint-only", "-Wall", "-y", str(RTL), str(path)]
    command += ["-G" + _define(k, v) for k, v in params.items()]
    return subprocess.run(command, capture_output=True, text=True)


def test_every_module_is_swept():
    assert sorted(SWEEPS) == MODULES


@pytest.mark.parametrize("module", MODULES)
def test_one_module_per_file_named_after_it_without_waivers(module):
    text = (RTL / f"{module}.v").read_text()
    assert re.findall(r"^module\s+(\w+)", text, flags=re.M) == [module]
    assert not re.search(r"lint_off|/[/*]\s*verilator", text)  # no waivers or Verilator pragmas
    assert text.lstrip().startswith(f"// {module}:")  # the header comment documents the module


@pytest.mark.verilator
@pytest.mark.parametrize("module", MODULES)
def test_verilator_lint_clean(module):
    for params in [{}, *SWEEPS.get(module, [])]:
        done = _lint(RTL / f"{module}.v", params)
        assert (done.returncode, done.stdout + done.stderr) == (0, ""), f"{module} {params}"


@pytest.mark.verilator
@pytest.mark.parametrize("kind,loop", [(0, False), (1, False), (2, True)], ids=["fifo", "skid", "wire"])
def test_no_combinational_path_from_out_tready_to_in_tready(kind, loop):
    done = _lint(TB / "tb_ready_loop.v", {"KIND": kind})
    assert ("UNOPTFLAT" in done.stderr) == loop, done.stderr
    if not loop:
        assert done.returncode == 0


@pytest.mark.iverilog
@pytest.mark.parametrize("module", MODULES)
def test_icarus_accepts(module):
    for params in [{}, *SWEEPS.get(module, [])]:
        command = ["iverilog", "-g2005", "-Wall", "-y", str(RTL), "-o", "/dev/null", str(RTL / f"{module}.v")]
        command += [f"-P{module}." + _define(k, v) for k, v in params.items()]
        done = subprocess.run(command, capture_output=True, text=True)
        assert (done.returncode, done.stdout + done.stderr) == (0, ""), f"{module} {params}"
