"""Performance numbers of the package on this machine (not a test: numbers to report).

    .venv/bin/python workflow/scripts/benchmark.py [--skip-main-job]

- `snakemake -n` on the repository: median wall time of 5 (target: under 5 s);
- the cold main job, `snakemake --cores all`, on a fresh copy of the workflow (target: at most
  5 minutes for the measured runs on 2 cores, 15 minutes for all full-scale compiles): its
  wall time and, from the results it wrote, each row's run and compile time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from workflow_copy import copy_workflow  # noqa: E402

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def timed(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return time.monotonic() - started, done


def dry_run_seconds(repeats: int = 5) -> float:
    return statistics.median(timed([*SNAKEMAKE, "-n", "--quiet"], REPO)[0] for _ in range(repeats))


def main_job() -> dict:
    directory = copy_workflow(Path(tempfile.mkdtemp(prefix="offload-repro-bench-")))
    wall, done = timed([*SNAKEMAKE, "--cores", "all"], directory)
    if done.returncode != 0:
        raise SystemExit(done.stdout[-3000:] + done.stderr[-3000:])
    runs = {p.stem: json.loads(p.read_text()) for p in (directory / "results/cpu/runs").glob("*.json")}
    compiled = {p.stem: json.loads(p.read_text()) for p in (directory / "results/compiled").glob("*/*.json")}
    return {
        "cores": os.cpu_count(),
        "main_job_wall_s": round(wall, 1),
        "run_wall_s": {row: r["provenance"]["wall_time_s"] for row, r in sorted(runs.items())},
        "compile_wall_s": {row: r["provenance"]["wall_time_s"] for row, r in sorted(compiled.items())},
        "compile_peak_rss_gib": {row: round(r["peak_rss_bytes"] / 2**30, 2) for row, r in sorted(compiled.items())},
        "verdict_counts": json.loads((directory / "results/cpu/verdicts.json").read_text())["counts"],
        "report_bytes": (directory / "results/report/index.html").stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-main-job", action="store_true")
    args = parser.parse_args()
    numbers = {"snakemake_dry_run_s": round(dry_run_seconds(), 2)}
    if not args.skip_main_job:
        numbers |= main_job()
    print(json.dumps(numbers, indent=2))


if __name__ == "__main__":
    main()
