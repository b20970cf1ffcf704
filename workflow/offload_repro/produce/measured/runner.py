"""One row on one target: launch real MaxText training, classify the outcome, write its JSON.

The JSON is the row's result whatever happened: `ok`, `oom` (out of memory is a published
outcome, so it is recorded, not raised) or `error` with the message. It is written atomically
and last, so an interrupted job never leaves a file that looks complete.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from offload_repro.cluster import jax_distributed, slurm
from offload_repro.cluster.jax_distributed import RANKS_DIR_VARIABLE
from offload_repro.core import failure, maxtext_args, provenance
from offload_repro.core.data import Row, Target
from offload_repro.core.files import REPO_ROOT, checkout_relative, read_json, write_json
from offload_repro.core.process import Supervised, fresh_work_dir, run_supervised
from offload_repro.core.results import read_result, write_result
from offload_repro.core.warm_start import run_warm
from offload_repro.produce.measured import launch, metrics, repeats, trace


def classify(returncode: int, exception: dict[str, Any] | None, log_tail: str, steps_done: int, steps: int) -> str:
    """ok, oom or error, from what the training process left behind."""
    if returncode == 0 and exception is None and steps_done >= steps:
        return "ok"
    if failure.OUT_OF_MEMORY.search((exception or {}).get("message", "") + "\n" + log_tail):
        return "oom"
    return "error"


def run_failure(
    returncode: int, exception: dict[str, Any] | None, log_text: str, log: str, steps_done: int, steps: int
) -> failure.Failure:
    """Why a run that is not ok failed, in its own words; one that exited 0 short of its steps said
    nothing, and the steps it completed are the cause."""
    found = failure.failure_of(returncode, log_text, log, exception)
    if found.found_in == "exit status" and returncode == 0:
        return replace(found, cause=f"training stopped after {steps_done} of {steps} steps", found_in="metrics file")
    return found


def launch_command(
    row: Row, target: Target, work_dir: Path, python: str, container_runtime: str, allow_unpinned: bool
) -> tuple[list[str], dict[str, str], dict[str, Any] | None]:
    """(command prefix up to the Python interpreter, extra environment, record of the container run)."""
    if target.launcher != "slurm":
        return [python], {}, None
    rank_env = slurm.rank_environment(row, target) | {RANKS_DIR_VARIABLE: str(work_dir / "ranks")}
    container = None
    if target.kind == "gpu":  # resolved once: the digest recorded is the one srun is given
        container = slurm.container_for(row).resolved(container_runtime, allow_unpinned)
    image = container["image"] if container else None
    return slurm.launch_prefix(target, image, container_runtime, work_dir, python), rank_env, container


class Interrupted(InterruptedError):
    """The cluster ended the job (cancelled, preempted, node lost): no result; Snakemake retries it."""


def stop_deadline(limit: slurm.TimeLimit | None) -> float | None:
    """Stop this long before SLURM's time limit, so the row's record is still written: a quarter of
    the limit, between 15 s and 2 minutes (srun needs a few seconds to stop its tasks).

    Not `sbatch --signal`: with `B:` it reaches only the executor plugin's batch shell (which does
    not forward it), without `B:` only job steps (the ranks, not this runner in the batch step)."""
    if limit is None:
        return None
    return limit.ends_at - min(120.0, max(15.0, limit.limit_s / 4))


def attempts_file(work_dir: Path) -> Path:
    """Beside the work directory (which each attempt empties): the attempts that left no record."""
    return work_dir.with_name(work_dir.name + ".attempts.json")


def begin_attempt(work_dir: Path) -> list[dict[str, Any]]:
    """Note this attempt before it runs; returns the earlier ones that never wrote a record: the
    cluster ended them (cancelled, preempted, node lost: a SIGKILL leaves no time to say so)."""
    path = attempts_file(work_dir)
    earlier = read_json(path) if path.exists() else []
    job = os.environ.get("SLURM_JOB_ID")
    now = {"slurm_job_id": job, "restart": os.environ.get("SLURM_RESTART_COUNT"), **provenance.stamp()}
    write_json(path, [*earlier, {"reason": "ended without a record (cancelled, preempted or node lost)", **now}])
    return earlier


def read_ranks(work_dir: Path, processes: int) -> list[dict[str, Any]]:
    """Each rank's record, by task; a rank that never wrote one is listed as such."""
    if processes < 2:
        return []
    ranks = []
    for task in range(processes):
        path = jax_distributed.rank_file(work_dir / "ranks", task)
        record = read_json(path) if path.exists() else {"task": task, "state": "never joined"}
        record["log"] = checkout_relative(Path(str(slurm.rank_log_pattern(work_dir)).replace("%t", str(task))))
        ranks.append(record)
    return ranks


def rank_failures(ranks: list[dict[str, Any]], srun_log: str) -> list[dict[str, Any]]:
    """Each rank that failed, with its own cause (core/failure.py): those srun names first, in its
    order, then those whose record says they failed, or that never joined and left words in their log
    (one that left nothing may never have started: srun's own words are then the run's cause)."""
    endings = failure.srun_endings(srun_log)
    by_task = {rank["task"]: rank for rank in ranks}
    failed = [task for task in endings if task in by_task]
    failed += [
        rank["task"]
        for rank in ranks
        if rank["task"] not in endings
        and (rank.get("exception") or rank.get("exit_status") or rank["state"] == "never joined")
    ]
    found = []
    for task in failed:
        rank = by_task[task]
        host, returncode = endings.get(task, (rank.get("host"), None))
        if rank["state"] == "ended":
            returncode = rank.get("exit_status", returncode)
        log = REPO_ROOT / rank["log"]
        log_text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        cause = failure.failure_of(returncode, log_text, rank["log"], rank.get("exception"))
        if task not in endings and rank["state"] == "never joined" and cause.found_in == "exit status":
            continue
        found.append({"task": task, "host": rank.get("host") or host, **cause.record()})
    return found


def ranks_message(failed: list[dict[str, Any]]) -> str:
    """Each cause once, with the ranks that gave it: 'ranks 1, 0 on vm: killed by SIGKILL'."""
    causes: dict[str, list[dict[str, Any]]] = {}
    for rank in failed:
        causes.setdefault(rank["cause"], []).append(rank)
    parts = []
    for cause, ranks in causes.items():
        more = f" and {len(ranks) - 8} more" if len(ranks) > 8 else ""
        tasks = ", ".join(str(rank["task"]) for rank in ranks[:8]) + more
        hosts = ", ".join(dict.fromkeys(str(rank["host"]) for rank in ranks[:8]))
        parts.append(f"rank{'s' if len(ranks) > 1 else ''} {tasks} on {hosts}: {cause}")
    return "; ".join(parts)


def row_failure(
    returncode: int,
    exception: dict[str, Any] | None,
    srun_log: str,
    log_file: Path,
    ranks: list[dict[str, Any]],
    steps_done: int,
    steps: int,
) -> tuple[dict[str, Any], str]:
    """(the `failure` record, the message) of a run that is not ok. A run of several processes
    takes its first failed rank's cause and lists each failed rank's (`ranks`)."""
    found = run_failure(returncode, exception, srun_log, checkout_relative(log_file), steps_done, steps)
    failed = rank_failures(ranks, srun_log)
    if not failed:
        return found.record(), found.cause
    first = failed[0]
    named = f"rank {first['task']} on {first['host']}: {first['cause']}"
    return {key: first[key] for key in found.record()} | {"cause": named, "ranks": failed}, ranks_message(failed)


def time_limit_message(target: Target, limit: slurm.TimeLimit | None, wall_s: float, steps_done: int) -> str:
    job = f"SLURM job {limit.job_id}'s time limit of {limit.limit_s / 60:g} min" if limit else "SLURM's time limit"
    return (
        f"time limit: stopped after {wall_s:.0f} s and {steps_done} of {target.scale['steps']} steps, before"
        f" {job}, so that this record could be written; the target asks for"
        f" {target.spec['cluster']['runtime_minutes']} min (cluster.runtime_minutes in its target file)"
    )


def split_log(log_file: Path, dirs: list[Path]) -> list[Path]:
    """The log of one process that ran several repeats, cut at each repeat's marker line into a
    train.log in each repeat's directory (what came before the second marker stays with the first)."""
    text = log_file.read_text(encoding="utf-8", errors="replace") if log_file.exists() else ""
    logs = [dirs[0] / "train.log", *(d / "train.log" for d in dirs[1:])]
    for number in range(len(dirs), 1, -1):  # from the last repeat back, each cut off the rest
        marker = launch.REPEAT_MARKER.format(number=number, count=len(dirs))
        text, found, part = text.partition(marker)
        if found:
            logs[number - 1].write_text(found + part, encoding="utf-8")
        else:  # the process ended before this repeat began
            text += part
    logs[0].write_text(text, encoding="utf-8")
    return logs


def launch_once(
    row: Row,
    target: Target,
    dirs: list[Path],
    python: str,
    container_runtime: str,
    allow_unpinned: bool,
    may_trace: bool = True,
) -> list[dict[str, Any]]:
    """One training process of the row, training once per directory of `dirs` (its repeats, in one
    process: see launch.py): how each ended and what it measured, up to the first that was not ok
    (SLURM's ranks start through srun). `may_trace`: whether the first may be profiled (only one
    of a row's repeats is, so that the profiler's cost stays out of the others' step times)."""
    work_dir = dirs[0]
    log_file = work_dir / "train.log"
    overrides = maxtext_args.target_overrides(row, target)
    overrides.update(
        base_output_directory=str(work_dir / "output"), run_name=row.id, metrics_file=str(work_dir / "metrics.jsonl")
    )
    # MaxText's own defaults, resolved by the training process (a container has its own MaxText).
    arguments = ["maxtext:configs/base.yml", *maxtext_args.as_arguments(overrides)]
    prefix, rank_env, container = launch_command(row, target, work_dir, python, container_runtime, allow_unpinned)
    stats_files = [str(d / "launch.json") for d in dirs]
    command = [*prefix, "-m", "offload_repro.produce.measured.launch", *stats_files, "--", *arguments]
    env = maxtext_args.environment(row, target) | rank_env
    trace_dir = work_dir / "trace"
    traced = may_trace and bool(target.spec.get("trace_offload_rows")) and bool(row.tensors("offload"))
    if traced:
        env[launch.TRACE_DIR_VARIABLE] = str(trace_dir)

    if target.launcher == "slurm":
        (work_dir / "ranks").mkdir(exist_ok=True)
        limit = slurm.time_limit()
        outcome = run_supervised(command, env, work_dir, log_file, stop_deadline(limit))
        if outcome.ended_by == "terminated":
            job = os.environ.get("SLURM_JOB_ID")
            raise Interrupted(f"SLURM job {job} was sent SIGTERM after {outcome.wall_s:.0f} s")
    else:
        limit = None
        outcome = Supervised(*run_warm(command, env, work_dir, log_file), "exit")
    logs = split_log(log_file, dirs) if len(dirs) > 1 else [log_file]
    launches = [read_json(Path(f)) if Path(f).exists() else {} for f in stats_files]
    # each later repeat's own training time; the first's wall time is the rest (the import, the start)
    later_s = [launched.get("train_seconds") or 0.0 for launched in launches[1:]]

    runs = []
    for number, (repeat_dir, launched, log) in enumerate(zip(dirs, launches, logs, strict=True), 1):
        wall_s = outcome.wall_s - sum(later_s) if number == 1 else later_s[number - 2]
        runs.append(
            repeat_result(row, target, repeat_dir, log, launched, outcome, limit, wall_s, traced and number == 1)
            | {"command": command[: len(prefix)], "container": container, "arguments": arguments}
            | {"xla_flags": env["XLA_FLAGS"]}
        )
        if runs[-1]["status"] != "ok":
            break
    return runs


def repeat_result(
    row: Row,
    target: Target,
    repeat_dir: Path,
    log_file: Path,
    launched: dict[str, Any],
    outcome: Supervised,
    limit: slurm.TimeLimit | None,
    wall_s: float,
    traced: bool,
) -> dict[str, Any]:
    """How one repeat ended and what it measured, from what it left in `repeat_dir`."""
    steps = metrics.read_steps(repeat_dir / "metrics.jsonl")
    ranks = read_ranks(repeat_dir, target.processes)
    srun_log = log_file.read_text(encoding="utf-8", errors="replace") if log_file.exists() else ""
    rank_logs = [REPO_ROOT / rank["log"] for rank in ranks]
    log_tail = srun_log[-20000:] + "".join(
        log.read_text(encoding="utf-8", errors="replace")[-20000:] for log in rank_logs if log.exists()
    )
    # a repeat that never wrote its record did not finish, whatever the process's exit status
    returncode = outcome.returncode if launched else outcome.returncode or 1
    status = classify(returncode, launched.get("exception"), log_tail, len(steps), target.scale["steps"])
    ended_by, message, cause = "completed", None, None
    if status != "ok":
        ended_by = "own failure"
        done = (len(steps), target.scale["steps"])
        cause, message = row_failure(returncode, launched.get("exception"), srun_log, log_file, ranks, *done)
    if outcome.ended_by == "deadline" or "DUE TO TIME LIMIT" in srun_log:
        status, ended_by = "error", "time limit"
        message = time_limit_message(target, limit, outcome.wall_s, len(steps))
        ended = failure.signal_name(outcome.returncode)
        cause = failure.Failure(message, "time limit", outcome.returncode, ended, checkout_relative(log_file)).record()

    perfetto = sorted((repeat_dir / "trace").rglob("perfetto_trace.json.gz")) if traced and status == "ok" else []
    overlap = trace.summarize(trace.read_events(perfetto[-1]), steps=len(steps)) if perfetto else None
    return {
        "status": status,
        "message": message,
        "failure": cause,
        "ended_by": ended_by,
        "summary": metrics.summarize(steps, target.scale["warmup_steps"]),
        "launch": launched,
        "ranks": ranks,
        "overlap": overlap,
        "wall_time_s": round(wall_s, 2),
        "train_log": checkout_relative(log_file),
    }


def per_repeat(run: dict[str, Any]) -> dict[str, Any]:
    launched = run["launch"]
    left = {key: launched.get(key) for key in ("live_arrays_at_start", "bytes_in_use_at_start")}
    return {"wall_time_s": run["wall_time_s"], **left}


def launch_repeats(
    row: Row, target: Target, dirs: list[Path], python: str, container_runtime: str, allow_unpinned: bool
) -> list[dict[str, Any]]:
    """The row's repeats, one per directory of `dirs`, up to the first that fails: all in one process
    where the launcher is local; through SLURM, one job step each (each its own srun of all ranks)."""
    if target.launcher != "slurm":
        return launch_once(row, target, dirs, python, container_runtime, allow_unpinned)
    runs: list[dict[str, Any]] = []
    for number, repeat_dir in enumerate(dirs, 1):
        runs += launch_once(row, target, [repeat_dir], python, container_runtime, allow_unpinned, number == 1)
        if runs[-1]["status"] != "ok":
            break
    return runs


def same_program_record(row: Row, rows: list[Row], target: Target, out_json: Path) -> dict[str, Any] | None:
    """This row's record as another row's, where that row is one program with it on the target
    (maxtext_args.same_program_rows) and its record is already beside `out_json`; None where none is.
    The record says whose it is (`same_program_as`)."""
    for other in maxtext_args.same_program_rows(rows, target)[row.id]:
        path = out_json.with_name(f"{other}.json")
        if other == row.id or not path.exists():
            continue
        ran = read_result(path, "run")
        if ran.get("same_program_as") or ran["target"] != target.name:
            continue  # only a row's own run is filed again
        mine = {"row": row.id, "table": row.table, "label": row.label, "published_outcome": row.published["outcome"]}
        return write_result(out_json, "run", ran | mine | {"same_program_as": other})
    return None


def run_row(
    row: Row,
    target: Target,
    out_json: Path,
    work_dir: Path,
    python: str = sys.executable,
    container_runtime: str = "pyxis",
    allow_unpinned: bool = False,
    times: int | None = None,
) -> dict[str, Any]:
    """Run the row `times` times, `target.repeats` unless given (each its own training run, stopping at
    the first that fails; see launch_repeats), and write its record; an attempt the cluster ended writes
    none (see Interrupted)."""
    times = times or target.repeats
    work_dir = fresh_work_dir(work_dir)  # MaxText runs inside it; every path handed over is absolute
    interruptions = begin_attempt(work_dir)
    try:
        dirs = [work_dir] if times == 1 else [fresh_work_dir(work_dir / f"repeat-{n}") for n in range(1, times + 1)]
        runs = launch_repeats(row, target, dirs, python, container_runtime, allow_unpinned)
    except Interrupted as interruption:  # when there was time to say why, the next attempt reads it
        attempts = read_json(attempts_file(work_dir))
        write_json(attempts_file(work_dir), [*attempts[:-1], attempts[-1] | {"reason": str(interruption)}])
        raise
    except Exception:  # this process's own failure (its traceback goes to the log), not the cluster's
        write_json(attempts_file(work_dir), interruptions)
        raise
    first, last = runs[0], runs[-1]
    ok = last["status"] == "ok"
    launched = first["launch"]
    result: dict[str, Any] = {
        "row": row.id,
        "table": row.table,
        "label": row.label,
        "target": target.name,
        "status": last["status"],
        "message": last["message"],
        "failure": last["failure"],
        "ended_by": last["ended_by"],
        "published_outcome": row.published["outcome"],
        "scaled": target.scale["devices"] != row.devices or bool(target.scale.get("families")),
        **first["summary"],  # losses and steps of the first repeat; throughput: the median of all
        **(repeats.aggregate([run["summary"] | per_repeat(run) for run in runs]) if ok else {}),
        "devices": launched.get("device_count"),
        "processes": launched.get("process_count"),
        "compiled_memory": launched.get("compiled_memory"),
        "runtime_memory": launched.get("runtime_memory"),
        "nvml_peak_used_bytes": launched.get("nvml_peak_used_bytes"),
        "host_peak_rss_bytes": launched.get("host_peak_rss_bytes"),
        "overlap": first["overlap"],
        "ranks": last["ranks"],
        "interruptions": interruptions,
        "provenance": {
            "command": first["command"],
            "container": first["container"],
            "maxtext_arguments": first["arguments"],
            "xla_flags": first["xla_flags"],
            "python": launched.get("python"),
            "versions": launched.get("versions"),
            # JAX's environment report (versions, host, devices, nvidia-smi) and the installed CUDA wheels
            "environment_info": launched.get("environment_info"),
            "cuda_packages": launched.get("cuda_packages"),
            "device_kind": launched.get("device_kind"),
            "platform": launched.get("platform"),
            "wall_time_s": round(sum(run["wall_time_s"] for run in runs), 2),
            "train_log": first["train_log"],
            "nodes": slurm.node_list(),
            **provenance.stamp(),
        },
    }
    written = write_result(out_json, "run", result)
    attempts_file(work_dir).unlink(missing_ok=True)
    return written
