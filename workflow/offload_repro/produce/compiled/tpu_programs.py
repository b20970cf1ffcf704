"""The programs a TPU target's kept runs ran, compiled again without the chip so that their
schedules can be read: one program per group of rows that are one program there
(`maxtext_args.same_program_rows`), each checked, field by field, against the memory analysis its
run recorded where it ran (the proof that the program read is the one that ran).

    python -m offload_repro.produce.compiled.tpu_programs TARGET OUT_DIR

needs libtpu (envs/requirements-tpu.lock, or the stack of envs/device/tpu-stack/ sourced by its
env.sh); a chip is not needed (6 minutes here for tpu-v5e-1). Writes OUT_DIR/<program>.hlo.gz (the
scheduled HLO, named by the group's first row) and OUT_DIR/programs.json (each program's rows,
memory analysis, compile time, and whether it equals its runs' recorded analysis). Kept as data in
experiments/device-results/<target>/programs/, they are what the target's steps are predicted from
(produce/predicted/device_prediction.py) on any machine.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from offload_repro.core import maxtext_args
from offload_repro.core.data import Row, Target, load_rows, load_target
from offload_repro.core.files import DEVICE_RESULTS_DIR, REPO_ROOT, read_json, write_json
from offload_repro.core.process import run_subprocess
from offload_repro.core.results import read_result

TABLES = ("experiments/rows/llama3.1-405b.yaml", "experiments/rows/deepseek-v3-671b.yaml")


def program_groups(rows: list[Row], target: Target) -> dict[str, list[str]]:
    """Each program by its first row's id, with the rows that are it on the target."""
    groups: dict[str, list[str]] = {}
    for ids in maxtext_args.same_program_rows(rows, target).values():
        groups.setdefault(ids[0], ids)
    return groups


def kept_runs(target: Target, kept_dir: Path) -> dict[str, dict[str, Any]]:
    return {path.stem: read_result(path, "run") for path in sorted((kept_dir / target.name / "runs").glob("*.json"))}


def matches_runs(memory: dict[str, Any] | None, rows: list[str], runs: dict[str, dict[str, Any]]) -> bool | None:
    """Whether the compiled memory analysis equals, field by field, what each of the rows' runs
    recorded of the program it ran; None where no run recorded one (a refused program)."""
    recorded = [runs[row]["compiled_memory"] for row in rows if row in runs and runs[row].get("compiled_memory")]
    recorded = [analysis for analysis in recorded if analysis.get("peak_memory_in_bytes")]
    if memory is None or not recorded:
        return None
    return all(all(analysis.get(k) == v for k, v in memory.items() if k in analysis) for analysis in recorded)


def compile_programs(target: Target, rows: list[Row], out_dir: Path) -> dict[str, Any]:
    """Compile each program once, one process per environment its rows are built under (XLA_FLAGS as
    a TPU reads them, the grouped matmul): libtpu allows one process at a time on a machine."""
    by_id = {row.id: row for row in rows}
    groups = program_groups(rows, target)
    by_environment: dict[tuple[tuple[str, str], ...], dict[str, list[str]]] = {}
    for program in groups:
        row = by_id[program]
        env = maxtext_args.environment(row, target)
        env["XLA_FLAGS"] = " ".join(maxtext_args.read_flags(env["XLA_FLAGS"], target))
        key = tuple(sorted((k, v) for k, v in env.items() if k in ("XLA_FLAGS", maxtext_args.RAGGED_DOT_VARIABLE)))
        by_environment.setdefault(key, {})[program] = maxtext_args.as_arguments(
            maxtext_args.target_overrides(row, target)
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tpu-programs-"))  # the compiles' arguments and logs, kept on failure
    topology = target.spec["hardware"]["topology"]
    compiled: dict[str, Any] = {}
    for number, (key, programs) in enumerate(by_environment.items()):
        arguments, out, log = (
            work / f"arguments-{number}.json",
            work / f"compiled-{number}.json",
            work / f"compile-{number}.log",
        )
        write_json(arguments, programs)
        env = maxtext_args.environment(by_id[next(iter(programs))], target) | dict(key)
        command = [
            sys.executable,
            "-m",
            "offload_repro.produce.compiled.tpu_compile",
            str(out),
            topology,
            str(arguments),
            str(out_dir),
        ]
        returncode, _ = run_subprocess(command, env, work, log)
        if not out.exists():
            raise RuntimeError(f"the compile process ended ({returncode}) without a result; see {log}")
        compiled.update(read_json(out)["programs"])
    runs = kept_runs(target, REPO_ROOT / DEVICE_RESULTS_DIR)
    record = {
        "target": target.name,
        "topology": topology,
        "programs": {
            program: {
                "rows": ids,
                "status": compiled[program]["status"],
                "memory": compiled[program]["memory"],
                "compile_seconds": compiled[program]["compile_seconds"],
                "equals_the_runs_analysis": matches_runs(compiled[program]["memory"], ids, runs),
            }
            for program, ids in groups.items()
        },
    }
    write_json(out_dir / "programs.json", record)
    shutil.rmtree(work)
    return record


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    target = load_target(sys.argv[1])
    found = compile_programs(target, load_rows(list(TABLES)), Path(sys.argv[2]).resolve())
    for name, program in found["programs"].items():
        same = program["equals_the_runs_analysis"]
        print(f"{name}: {program['status']}, rows {program['rows']}, equals the runs' analysis: {same}")
