"""What a device tier measured, kept as data: its run and probe files, each run with the log lines its
numbers come from, under experiments/device-results/<target>/, so that any machine builds that
target's page from them with no such device present.

    python -m offload_repro.produce.measured.device_results TARGET RESULTS.tar.gz [MORE.tar.gz ...]

Each archive is what envs/device/<target>.sh left in $OUT (results/<target>/ with every run's
train.log). A later archive's record of a row replaces an earlier one's. Each file is validated
against its schema before anything is written; the logs themselves stay behind (large), and only
the lines each number is read from travel with the record: MaxText's step lines (step time,
TFLOP/s, loss), its memory lines, and the runtime's words where a run failed.
"""

from __future__ import annotations

import re
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from offload_repro.core.failure import OUT_OF_MEMORY
from offload_repro.core.files import DEVICE_RESULTS_DIR, REPO_ROOT, read_json
from offload_repro.core.results import read_result, write_result
from offload_repro.produce.measured import trace

# The lines of MaxText's log a run's numbers are read from.
LOG_LINES = {
    "steps": re.compile(r"completed step: \d+, seconds: "),
    "memory": re.compile(r"Total estimated memory size|Using \(GB\) [\d.]+ / [\d.]+"),
    "failure": OUT_OF_MEMORY,
}
KEPT_DIR = REPO_ROOT / DEVICE_RESULTS_DIR


def log_lines(text: str) -> dict[str, list[str]]:
    """The lines each of a run's numbers comes from, as the log has them, less the logger's prefix."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        for name, pattern in LOG_LINES.items():
            if pattern.search(line):
                found.setdefault(name, []).append(re.sub(r"^[IWE]\d{4} [\d:.]+\s+\d+ \S+\] ", "", line).strip())
                break
    return found


def with_log_lines(result: dict[str, Any], unpacked: Path) -> dict[str, Any]:
    """The run's record with each repeat's log lines (`log_lines`: one entry per repeat that left a log)."""
    work = unpacked / Path(result["provenance"]["train_log"]).parent
    logs = sorted(work.glob("repeat-*/train.log")) or sorted(work.glob("train.log"))
    return result | {
        "log_lines": [
            {"log": str(log.relative_to(unpacked)), **log_lines(log.read_text(encoding="utf-8", errors="replace"))}
            for log in logs
        ]
    }


def with_waits(result: dict[str, Any], trace_events: dict[str, Any]) -> dict[str, Any]:
    """A TPU run's copy overlap, from its trace's events by name (the tier's trace-events.json), where
    the record has none: the time the core waited for host copies per step (produce/measured/trace.py)."""
    if result["status"] != "ok" or (result.get("overlap") or {}).get("host_copies"):
        return result
    traced = [names for path, names in trace_events.items() if f"/work/{result['row']}/" in path]
    waits = trace.tpu_waits(traced[0], result["steps_completed"]) if traced else None
    return result if waits is None else result | {"overlap": waits}


def keep(target: str, archives: list[Path], kept_dir: Path = KEPT_DIR) -> list[Path]:
    """Validate every record of the archives, then write them under `kept_dir`/`target`/. An archive's
    trace-events.json beside it (what the tier writes to $OUT) gives its offload rows' copy waits."""
    records: dict[str, tuple[str, dict[str, Any]]] = {}  # relative path -> (kind, record)
    with tempfile.TemporaryDirectory() as scratch:
        for number, archive in enumerate(archives):
            unpacked = Path(scratch) / str(number)
            with tarfile.open(archive) as tar:
                tar.extractall(unpacked, filter="data")
            results = unpacked / "results" / target
            if not results.is_dir():
                raise ValueError(f"{archive}: holds no results/{target}/")
            events_file = archive.with_name("trace-events.json")
            trace_events = read_json(events_file) if events_file.exists() else {}
            for path in sorted((results / "runs").glob("*.json")):
                record = with_waits(with_log_lines(read_result(path, "run"), unpacked), trace_events)
                records[f"runs/{path.name}"] = ("run", record)
            if (results / "probe.json").exists():
                records["probe.json"] = ("probe", read_result(results / "probe.json", "probe"))
    for relative, (_, record) in records.items():
        if record["target"] != target:
            raise ValueError(f"{relative}: a record of target '{record['target']}', not '{target}'")
    written = []
    for relative, (kind, record) in sorted(records.items()):
        written.append(kept_dir / target / relative)
        write_result(written[-1], kind, record)
    return written


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for path in keep(sys.argv[1], [Path(p) for p in sys.argv[2:]]):
        print(path)
