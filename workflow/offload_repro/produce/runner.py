"""One row on one target: launch real MaxText training, classify the outcome, write its JSON.

The JSON is the row's result whatever happened: `ok`, `oom` (out of memory is a published
outcome, so it is recorded, not raised) or `error` with the message. It is written atomically
and last, so an interrupted job never leaves a file that looks complete.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from offload_repro.cluster import slurm
from offload_repro.core import memory, provenance
from offload_repro.core.data import Row, Target
from offload_repro.core.files import REPO_ROOT, read_json
from offload_repro.core.forkserver import VARIABLE as FORKSERVER_VARIABLE
from offload_repro.core.observation import Observation, Observer
from offload_repro.core.process import fresh_work_dir, package_environment, run_logged
from offload_repro.core.results import write_result
from offload_repro.produce import maxtext_args, metrics, trace
from offload_repro.produce.launch import TRACE_DIR_VARIABLE

OOM_PATTERN = re.compile(r"RESOURCE_EXHAUSTED|out of memory|CUDA_ERROR_OUT_OF_MEMORY", re.IGNORECASE)
OUTCOME_OF_STATUS = {"ok": "fits", "oom": "oom"}
ERROR_LINE = re.compile(r"^\w*(Error|Exception)\b.*|.*Error: .*")


def classify(
    returncode: int, exception: dict[str, Any] | None, log_tail: str, steps_done: int, steps: int
) -> tuple[str, str | None]:
    """(status, message) from what the training process left behind."""
    text = (exception or {}).get("message", "") + "\n" + log_tail
    if returncode == 0 and exception is None and steps_done >= steps:
        return "ok", None
    if match := OOM_PATTERN.search(text):
        line = text[text.rfind("\n", 0, match.start()) + 1 : text.find("\n", match.end())]
        return "oom", line.strip()[:500]
    if exception is not None:
        return "error", f"{exception['type']}: {exception['message']}"[:2000]
    if returncode < 0:
        return "error", f"killed by signal {-returncode}"
    errors = [line for line in log_tail.splitlines() if ERROR_LINE.match(line.strip())]
    if errors:
        return "error", errors[-1].strip()[:2000]
    if returncode != 0:
        return "error", f"training exited with status {returncode}"
    return "error", f"training stopped after {steps_done} of {steps} steps"


def environment(row: Row, target: Target) -> dict[str, str]:
    env = package_environment({"XLA_FLAGS": maxtext_args.xla_flags(row)})
    if target.kind == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    else:  # the fork server is proven on XLA:CPU runs and compiles; a GPU run starts its own process
        env.pop(FORKSERVER_VARIABLE, None)
    env.update({key: str(value) for key, value in target.spec.get("environment", {}).items()})
    return env


def launch_command(
    row: Row, target: Target, work_dir: Path, python: str, container_runtime: str, allow_unpinned: bool
) -> tuple[list[str], dict[str, str], dict[str, Any] | None]:
    """(command prefix up to the Python interpreter, extra environment, container record)."""
    if target.launcher != "slurm" or target.kind != "gpu":
        return [python], {}, None
    container = slurm.container_for(row)
    prefix = slurm.launch_prefix(row, target, container_runtime, allow_unpinned, work_dir)
    record = {
        "name": container.name,
        "reference": container.reference,
        "digest": container.digest,
        "image": container.image(container_runtime, allow_unpinned),
        "runtime": container_runtime,
    }
    return prefix, slurm.rank_environment(row, target), record


def run_row(
    row: Row,
    target: Target,
    out_json: Path,
    work_dir: Path,
    python: str = sys.executable,
    container_runtime: str = "pyxis",
    allow_unpinned: bool = False,
) -> dict[str, Any]:
    work_dir = fresh_work_dir(work_dir)  # MaxText runs inside it; every path handed over is absolute
    metrics_file, stats_file, log_file = work_dir / "metrics.jsonl", work_dir / "launch.json", work_dir / "train.log"
    overrides = maxtext_args.target_overrides(row, target)
    overrides.update(base_output_directory=str(work_dir / "output"), run_name=row.id, metrics_file=str(metrics_file))
    # MaxText's own defaults, resolved by the training process (a container has its own MaxText).
    arguments = ["maxtext:configs/base.yml", *maxtext_args.as_arguments(overrides)]
    prefix, rank_env, container = launch_command(row, target, work_dir, python, container_runtime, allow_unpinned)
    command = [*prefix, "-m", "offload_repro.produce.launch", str(stats_file), "--", *arguments]
    env = environment(row, target) | rank_env
    trace_dir = work_dir / "trace"
    traced = bool(target.spec.get("trace_offload_rows")) and bool(row.tensors("offload"))
    if traced:
        env[TRACE_DIR_VARIABLE] = str(trace_dir)

    returncode, wall_s = run_logged(command, env, work_dir, log_file)

    launch = read_json(stats_file) if stats_file.exists() else {}
    steps = metrics.read_steps(metrics_file)
    log_tail = log_file.read_text(encoding="utf-8", errors="replace")[-20000:]
    status, message = classify(returncode, launch.get("exception"), log_tail, len(steps), target.scale["steps"])

    overlap = None
    if traced and status == "ok":
        perfetto = sorted(trace_dir.rglob("perfetto_trace.json.gz"))
        if perfetto:
            overlap = trace.summarize(trace.read_events(perfetto[-1]), steps=len(steps))
    result: dict[str, Any] = {
        "row": row.id,
        "table": row.table,
        "label": row.label,
        "target": target.name,
        "status": status,
        "message": message,
        "published_outcome": row.published["outcome"],
        "scaled": target.scale["devices"] != row.devices or bool(target.scale.get("families")),
        **metrics.summarize(steps, target.scale["warmup_steps"]),
        "devices": launch.get("device_count"),
        "compiled_memory": launch.get("compiled_memory"),
        "runtime_memory": launch.get("runtime_memory"),
        "nvml_peak_used_bytes": launch.get("nvml_peak_used_bytes"),
        "host_peak_rss_bytes": launch.get("host_peak_rss_bytes"),
        "overlap": overlap,
        "provenance": {
            "command": command[: len(prefix)],
            "container": container,
            "maxtext_arguments": arguments,
            "xla_flags": env["XLA_FLAGS"],
            "python": launch.get("python"),
            "versions": launch.get("versions"),
            "device_kind": launch.get("device_kind"),
            "platform": launch.get("platform"),
            "wall_time_s": round(wall_s, 2),
            "train_log": str(log_file.relative_to(REPO_ROOT) if log_file.is_relative_to(REPO_ROOT) else log_file),
            **provenance.stamp(),
        },
    }
    return write_result(out_json, "run", result)


def observe(result: dict[str, Any], source: str) -> list[Observation]:
    """A run's observations: how it ended, throughput, memory, losses per step, copy overlap."""
    seen = Observer(result, source, "measured", result["row"], result["target"])
    seen.status_line()
    seen.add("outcome", OUTCOME_OF_STATUS.get(result["status"]))
    seen.add("tflops_per_device", result.get("tflops_per_device"), "TFLOPs/s/device")
    seen.add("step_time_s", result.get("step_time_s"), "s")
    seen.add("tokens_per_s_per_device", result.get("tokens_per_s_per_device"), "tokens/s/device")
    peak = (result.get("runtime_memory") or {}).get("peak_bytes_in_use") or result.get("nvml_peak_used_bytes")
    seen.add("gpu_memory_gib", memory.gib(peak), "GiB")
    seen.add("host_peak_rss_gib", memory.gib(result.get("host_peak_rss_bytes")), "GiB")
    losses = result.get("losses") or []
    for step, loss in enumerate(losses):
        seen.add("loss", loss, at=step)
    if losses:
        seen.add("final_loss", losses[-1])
    overlap = result.get("overlap") or {}
    seen.add("host_copies", overlap.get("host_copies"))
    seen.add("copy_s_per_step", overlap.get("copy_s_per_step"), "s")
    seen.add("compute_s_per_step", overlap.get("compute_s_per_step"), "s")
    seen.add("copy_hidden_fraction", overlap.get("hidden_fraction"), "fraction")
    seen.add("exposed_copy_s_per_step", overlap.get("exposed_copy_s_per_step"), "s")
    seen.add("wall_time_s", result["provenance"].get("wall_time_s"), "s")
    return seen.observations
