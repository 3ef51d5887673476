"""``hlsfuse explore --verify`` under Verilator, and the same sweep on a real Dask cluster on this machine
(a scheduler and two workers on 127.0.0.1, started as a user would start them)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_process import cli_env

import hlsfuse.explore.sweep as sweep_module
from hlsfuse.cli import main
from hlsfuse.explore.verify import TOLERANCE, flag

ROOT = Path(__file__).resolve().parents[1]
RESIDUAL = str(ROOT / "examples" / "residual.json")
SWEEP = [RESIDUAL, "--boards", "pynq-z2,zcu104", "--fusion", "fpga,unfused", "--verify", "1", "--frames", "2"]


def _points(out: Path) -> list[dict]:
    return json.loads((out / "points.json").read_text())["points"]


def test_a_point_is_flagged_when_it_is_not_exact_or_strays_from_the_model():
    assert flag(True, 1.0) == "" and flag(True, 1 + TOLERANCE) == ""
    assert flag(True, 1.06) == "measured 1.060 x the model's cycles"
    assert flag(False, 1.0) == "outputs differ from the reference"
    assert flag(True, None) == "no steady-state rate measured"
    assert flag(False, 1.0, "stage s1 stalled").startswith("deadlock: stage s1 stalled")


@pytest.mark.matplotlib
def test_a_flagged_point_is_in_the_table_and_the_exit_code(tmp_path, monkeypatch, capsys):
    def slow(key, point, payload=None, frames=3, seed=0):
        return {"id": point.id, "measured_cycles": 2000.0, "model_cycles": 1575, "measured_ratio": 1.27,
                "bit_exact": True, "compared": 1, "frames": frames, "flag": flag(True, 1.27), "built": False,
                "seconds": 0.0}

    monkeypatch.setattr(sweep_module, "verify_point", slow)
    out = tmp_path / "x"
    assert main(["explore", RESIDUAL, "--boards", "pynq-z2", "--fusion", "fpga", "--verify", "1", "-o", str(out),
                 "--jobs", "1"]) == 1
    [row] = _points(out)
    assert (row["measured_cycles"], row["measured_ratio"], row["flag"]) == (2000.0, 1.27, "measured 1.270 x the "
                                                                            "model's cycles")
    assert "FLAG: measured 1.270" in capsys.readouterr().out


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "x"
    assert main(["explore", *SWEEP, "-o", str(out), "--jobs", "2"]) == 0
    return out


@pytest.mark.verilator
@pytest.mark.matplotlib
def test_the_best_point_is_verified_bit_exact_at_the_models_rate(local_sweep):
    points = _points(local_sweep)
    [verified] = [p for p in points if p["measured_cycles"] is not None]
    assert verified["rank"] == 1 and verified["bit_exact"] is True and verified["flag"] == ""
    assert abs(verified["measured_ratio"] - 1) <= TOLERANCE
    found = json.loads((local_sweep / "points" / verified["id"] / "verify.json").read_text())
    assert found["model_cycles"] == verified["cycles_per_frame"] and found["compared"] > 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Dask scheduler and two single-threaded workers on 127.0.0.1, stopped afterwards."""
    from distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    space = tmp_path_factory.mktemp("dask")
    env = cli_env()  # the workers import hlsfuse from this checkout
    quiet = {"stdout": subprocess.DEVNULL, "stderr": open(space / "log", "w"), "env": env, "cwd": space}  # noqa: SIM115
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port",
                               str(port), "--no-dashboard"], **quiet)]
    try:
        procs += [subprocess.Popen([sys.executable, "-m", "dask", "worker", address, "--nthreads", "1",
                                    "--no-dashboard", "--name", f"w{k}", "--local-directory", str(space / f"w{k}")],
                                   **quiet) for k in range(2)]
        deadline = time.monotonic() + 60
        while True:  # the scheduler takes a moment to listen
            try:
                with Client(address, timeout="5s") as client:
                    client.wait_for_workers(2, timeout=60)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
        quiet["stderr"].close()


@pytest.mark.verilator
@pytest.mark.matplotlib
@pytest.mark.dask
def test_a_dask_cluster_gives_the_local_result(cluster, local_sweep, tmp_path):
    out = tmp_path / "x"
    assert main(["explore", *SWEEP, "-o", str(out), "--scheduler", cluster]) == 0
    assert _points(out) == _points(local_sweep)
    assert {p.parent.name for p in out.glob("points/*/verify.json")} == {
        p.parent.name for p in local_sweep.glob("points/*/verify.json")}


@pytest.mark.dask
def test_an_address_without_a_scheduler_is_one_line(tmp_path, capsys):
    address = f"tcp://127.0.0.1:{_free_port()}"
    assert main(["explore", RESIDUAL, "--boards", "pynq-z2", "-o", str(tmp_path / "x"), "--scheduler", address]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hlsfuse: error: --scheduler {address}: cannot connect to a Dask scheduler") and \
        err.count("\n") == 1
