"""Wall seconds of rows run as today's subprocesses against forked from a warm fork server.

`PYTHONPATH=workflow python workflow/scripts/forkserver_timing.py [ROW ...] [--repeats N]`:
for each row, the CPU training run (runner.run_row, target cpu) and the GB200 compile
(compile.compile_row, target gb200-nvl72), both ways in turn, checking the results agree
(the losses; the memory analysis and the HLO hash). Work goes under results/forkserver-timing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from glob import glob
from pathlib import Path
from typing import Any

from offload_repro.core import forkserver
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.files import REPO_ROOT
from offload_repro.core.process import Launcher, package_environment, run_subprocess
from offload_repro.produce.compiled.compiled_row import compile_row
from offload_repro.produce.measured import metrics
from offload_repro.produce.measured.runner import run_row

OUT = REPO_ROOT / "results" / "forkserver-timing"


def warm_server(launcher: Launcher) -> float:
    """Start the server for the rows' environment (JAX_PLATFORMS=cpu for both kinds); its seconds."""
    work = OUT / "warm"
    work.mkdir(parents=True, exist_ok=True)
    env = package_environment({"JAX_PLATFORMS": "cpu"})
    returncode, seconds = launcher([sys.executable, "-m", "platform"], env, work, work / "warm.log")
    if returncode != 0 or "not used" in (work / "warm.log").read_text():
        raise RuntimeError(f"no fork server: see {work / 'warm.log'}")
    return seconds


def run(kind: str, row: Any, mode: str, launcher: Launcher) -> tuple[float, Any]:
    """(wall seconds, what must agree) for one row one way."""
    work = OUT / mode / kind / row.id
    if kind == "cpu-run":
        result = run_row(row, load_target("cpu"), work / "result.json", work / "work", launcher=launcher)
        assert result["status"] == "ok", result["message"]
        losses = [step[metrics.LOSS] for step in metrics.read_steps(work / "work" / "metrics.jsonl")]
        return result["provenance"]["wall_time_s"], losses
    result = compile_row(row, load_target("gb200-nvl72"), work / "result.json", work / "work", launcher=launcher)
    assert result["status"] == "ok", result["message"]
    return result["provenance"]["wall_time_s"], (result["memory"], result["hlo_sha256"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("rows", nargs="*", default=["llama-baseline", "deepseek-offload-optimized"])
    parser.add_argument("--repeats", type=int, default=1)
    options = parser.parse_args()
    rows = {row.id: row for row in load_rows(sorted(glob(str(REPO_ROOT / "experiments" / "rows" / "*.yaml"))))}
    forked = forkserver.ForkServerLauncher(Path(tempfile.mkdtemp(prefix="fs-timing-", dir="/tmp")))
    print(f"{'row':28} {'kind':12} {'subprocess s':>12} {'fork s':>8} {'saved s':>8}  identical")
    for repeat in range(options.repeats):
        for row_id in options.rows:
            for kind in ("cpu-run", "gb200-compile"):
                plain_s, plain = run(kind, rows[row_id], "subprocess", run_subprocess)
                warm_s = warm_server(forked)  # already warm after the first: ~0 s
                fork_s, from_fork = run(kind, rows[row_id], "fork", forked)
                same = "yes" if plain == from_fork else f"NO: {plain} vs {from_fork}"
                saved = plain_s - fork_s
                print(f"{row_id:28} {kind:12} {plain_s:12.1f} {fork_s:8.1f} {saved:8.1f}  {same}", flush=True)
                if warm_s > 1:
                    print(f"  (repeat {repeat}: server started in {warm_s:.1f} s, before the forked run)", flush=True)


if __name__ == "__main__":
    main()
