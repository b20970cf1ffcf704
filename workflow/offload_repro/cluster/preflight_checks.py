"""Before the rows: one short job on the chosen SLURM target that checks what would otherwise fail
32 nodes in: the image, its MaxText and the keys the rows pass, the GPUs, the host memory the
offload rows need (from their compiled programs), and the distributed start across two nodes.

Every check prints one line (ok, FAIL or skip, with what it saw); any FAIL stops the workflow
before a row is submitted. On a CPU target the GPU and container checks are skipped, the rest run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from offload_repro.cluster import slurm
from offload_repro.core import maxtext_args, memory, provenance
from offload_repro.core.data import Row, Target
from offload_repro.core.failure import Failure, failure_of
from offload_repro.core.files import REPO_ROOT, checkout_relative
from offload_repro.core.results import read_result, write_result

LOCK = REPO_ROOT / "envs" / "requirements.lock"
PROBE = "offload_repro.cluster.preflight_probe"
# Keys the runner adds to every row's MaxText command line besides the row's own settings.
RUNNER_KEYS = ("base_output_directory", "run_name", "metrics_file")


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | fail | skip
    detail: str
    failure: dict[str, Any] | None = None  # a check whose step failed: why, in its own words (core/failure.py)

    def line(self) -> str:
        return f"{self.status.upper():<5} {self.check:<12} {self.detail}"


def pinned_maxtext() -> str:
    """The MaxText version the rows were written for: the one the lock pins."""
    match = re.search(r"^maxtext==(\S+)", LOCK.read_text(encoding="utf-8"), re.MULTILINE)
    if match is None:
        raise ValueError(f"{LOCK}: no maxtext== pin")
    return match.group(1)


def keys_by_row(rows: list[Row], target: Target) -> dict[str, list[str]]:
    """{MaxText key: rows that pass it} for every key the runner gives MaxText on this target."""
    passed: dict[str, list[str]] = {key: [row.id for row in rows] for key in RUNNER_KEYS}
    for row in rows:
        for key in maxtext_args.target_overrides(row, target):
            passed.setdefault(key, []).append(row.id)
    return passed


def largest_host_bytes(compiled_files: list[Path]) -> tuple[str, int] | None:
    """(row, bytes) of the row whose compiled program holds the most pinned host memory per device."""
    results = [read_result(path, "compile") for path in compiled_files]
    found = [(result["row"], result["host_bytes"]) for result in results if result.get("host_bytes")]
    return max(found, key=lambda item: (item[1], item[0]), default=None)


def check_container(container: dict[str, Any] | None, host: str, python: str) -> Finding:
    if container is None:
        return Finding("container", "skip", f"a CPU target: ranks run {python} from this checkout")
    image, digest = container["image"], container["digest_at_run_time"]
    if digest is None:
        return Finding("container", "fail", f"{image} started, but its digest is unknown: {container['digest_error']}")
    return Finding("container", "ok", f"{image} started on {host}; digest {digest}")


def check_maxtext(facts: dict[str, Any], keys: dict[str, list[str]], expected: str) -> list[Finding]:
    host, version = facts["host"], facts["maxtext_version"]
    if version is None:
        return [Finding("maxtext", "fail", f"MaxText cannot be imported on {host}: {facts['maxtext_error']}")]
    findings = [
        Finding("maxtext", "ok", f"{version} on {host}, the version envs/requirements.lock pins")
        if version == expected
        else Finding("maxtext", "fail", f"{host} has MaxText {version}; the rows were written for {expected}")
    ]
    refused = facts["refused_keys"]
    for key in refused:
        rows = keys.get(key, [])
        shown = ", ".join(rows[:3]) + (", ..." if len(rows) > 3 else "")
        detail = f"MaxText {version} refuses key '{key}', passed by {len(rows)} rows ({shown})"
        findings.append(Finding("maxtext keys", "fail", detail))
    if not refused:
        findings.append(Finding("maxtext keys", "ok", f"MaxText {version} accepts all {len(keys)} keys the rows pass"))
    return findings


def check_gpus(facts: dict[str, Any], target: Target) -> Finding:
    if target.kind == "cpu":
        return Finding("gpus", "skip", "a CPU target: no GPUs to count")
    expected, model = target.spec["cluster"]["gpus_per_node"], target.spec["hardware"]["accelerator"]
    gpus = facts["gpus"]
    if gpus is None:
        return Finding("gpus", "fail", f"no nvidia-smi on {facts['host']}: cannot see its GPUs")
    names = sorted({gpu["name"] for gpu in gpus})
    if len(gpus) != expected or not all(model.lower() in name.lower() for name in names):
        seen = f"{facts['host']} has {len(gpus)} x {names}"
        return Finding("gpus", "fail", f"{seen}; the target wants {expected} x {model}")
    return Finding("gpus", "ok", f"{len(gpus)} x {names[0]} on {facts['host']}, as the target says")


def check_host_memory(facts: dict[str, Any], target: Target, largest: tuple[str, int] | None) -> Finding:
    limits = {name: value for name, value in facts["memory"].items() if value}
    if not limits:
        return Finding("host memory", "fail", f"could not read any host memory limit on {facts['host']}")
    tightest, limit = min(limits.items(), key=lambda item: item[1])
    seen = f"{memory.gib(limit):.1f} GiB may be used on {facts['host']} (the {tightest.replace('_', ' ')})"
    if target.kind == "cpu" or largest is None:
        reason = "a CPU target places nothing in host memory" if target.kind == "cpu" else "no compiled evidence"
        return Finding("host memory", "ok" if target.kind == "cpu" else "skip", f"{seen}; {reason}")
    row, per_device = largest
    processes_per_node = target.tasks_per_node
    needed = per_device * processes_per_node
    pinned_limit = target.run_environment.get("XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB")
    detail = (
        f"{seen}; {row} compiles to {memory.gib(per_device):.1f} GiB of host buffers per GPU,"
        f" {memory.gib(needed):.1f} GiB for {processes_per_node} processes"
    )
    if needed > limit:
        return Finding("host memory", "fail", detail + ": more than the limit")
    if pinned_limit is not None and per_device > float(pinned_limit) * memory.GB:
        return Finding(
            "host memory", "fail", detail + f", more than XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB={pinned_limit} per process"
        )
    return Finding("host memory", "ok", detail)


def check_distributed(outputs: list[dict[str, Any]], nodes: int, tasks: int) -> Finding:
    hosts = sorted({output["host"] for output in outputs})
    expected_sum = tasks * (tasks + 1) / 2
    if len(outputs) != tasks or any(o["process_count"] != tasks or o["sum"] != expected_sum for o in outputs):
        return Finding("distributed", "fail", f"{len(outputs)} of {tasks} processes reported: {outputs}")
    where = f"{nodes} nodes ({', '.join(hosts)})" if nodes > 1 else f"1 node ({hosts[0]}; the target has one)"
    joined = f"{tasks} processes on {where} joined and summed to {expected_sum:g} on {outputs[0]['backend']}"
    return Finding("distributed", "ok", joined)


class StepFailed(RuntimeError):
    """An srun step of the preflight failed; `failure`: why, in its tasks' own words."""

    def __init__(self, message: str, failure: Failure):
        super().__init__(message)
        self.failure = failure


def srun(
    options: list[str], interpreter: list[str], arguments: list[str], env: dict[str, str], log_file: Path
) -> list[str]:
    """Run one srun step, its output kept in `log_file`; its stdout lines (one JSON per task)."""
    command = [*slurm.SRUN, *options, *interpreter, *arguments]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    log_file.write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        cause = failure_of(done.returncode, done.stderr + "\n" + done.stdout, checkout_relative(log_file))
        step = f"`{' '.join(command[:8])} ...` failed (exit status {done.returncode})"
        raise StepFailed(f"{step}: {cause.cause}; its output: {cause.log}", cause)
    return [line for line in done.stdout.splitlines() if line.startswith("{")]


def preflight(
    rows: list[Row],
    target: Target,
    compiled_files: list[Path],
    work_dir: Path,
    python: str,
    runtime: str,
    allow_unpinned: bool,
    env: dict[str, str],
) -> tuple[list[Finding], dict[str, Any]]:
    """Every check's finding, and what was seen (for the record)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    findings: list[Finding] = []
    image, container = None, None
    if target.kind == "gpu":
        # One image per job is what a row runs in; the preflight checks the first row's (all rows'
        # images are named by envs/containers.yaml, per model family).
        container = slurm.container_for(rows[0]).resolved(runtime, allow_unpinned)
        image = container["image"]
    gpu_option = [f"--gpus-per-node={target.tasks_per_node}"] if target.kind == "gpu" else []
    interpreter = slurm.interpreter(image, runtime, work_dir, python)
    keys = keys_by_row(rows, target)
    keys_file = work_dir / "keys.json"
    keys_file.write_text(json.dumps(sorted(keys)))
    try:
        one_task = ["--nodes=1", "--ntasks=1", *gpu_option]
        arguments = ["-m", PROBE, "facts", str(keys_file)]
        facts = json.loads(srun(one_task, interpreter, arguments, env, work_dir / "facts.log")[0])
    except (StepFailed, IndexError) as err:
        what = f"image {image}" if image else python
        cause = err.failure.record() if isinstance(err, StepFailed) else None
        return [Finding("start", "fail", f"could not run {what} on a node: {err}", cause)], {}
    # The probe's step may not carry SLURM's memory variables; the job's grant is asked of SLURM.
    facts["memory"]["slurm_job_bytes"] = facts["memory"]["slurm_job_bytes"] or slurm.job_memory_bytes()
    findings.append(check_container(container, facts["host"], python))
    findings += check_maxtext(facts, keys, pinned_maxtext())
    findings.append(check_gpus(facts, target))
    largest = largest_host_bytes(compiled_files)
    findings.append(check_host_memory(facts, target, largest))
    nodes = min(2, target.spec["cluster"]["nodes"])  # two processes: on two nodes, or both on a one-node target's
    try:
        spread_out = [f"--nodes={nodes}", "--ntasks=2", *gpu_option]
        lines = srun(spread_out, interpreter, ["-m", PROBE, "distributed"], env, work_dir / "distributed.log")
        findings.append(check_distributed([json.loads(line) for line in lines], nodes, 2))
    except StepFailed as err:
        findings.append(Finding("distributed", "fail", str(err), err.failure.record()))
    return findings, {"facts": facts, "container": container, "largest_host_bytes": largest}


def write_preflight(
    rows: list[Row],
    target: Target,
    compiled_files: list[Path],
    out: Path,
    work_dir: Path,
    runtime: str,
    allow_unpinned: bool,
) -> bool:
    """Print one line per check; write the record (and return True) only when none failed."""
    env = maxtext_args.environment(rows[0], target) | slurm.rank_environment(rows[0], target)  # what a rank gets
    findings, seen = preflight(rows, target, compiled_files, work_dir, sys.executable, runtime, allow_unpinned, env)
    job = os.environ.get("SLURM_JOB_ID")
    print(f"preflight of {target.name} (SLURM job {job}, nodes {','.join(slurm.node_list() or ['?'])}):")
    for finding in findings:
        print("  " + finding.line())
    failed = sum(finding.status == "fail" for finding in findings)
    print(f"preflight: {f'{failed} problem(s); no row is run until they are fixed' if failed else 'passed'}")
    if not failed:
        record = {"target": target.name, "findings": [asdict(f) for f in findings], **seen, **provenance.stamp()}
        write_result(out, "preflight", record)
    return not failed
