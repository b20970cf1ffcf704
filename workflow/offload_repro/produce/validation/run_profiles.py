"""A latency profile for the published runs' programs, as they were scheduled: each run's timed step
was scheduled with a profile recorded on its cluster (PGLE), which is not published, so the profile
here is the step-time model's costs of each run's program (produce/predicted/model_profile.py),
compute at the rate fitted on the smallest run of its GPU and precision (calibration (a)) at the
central setting. One file serves every run: each entry is named by its program's fingerprint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.measured_elsewhere import MeasuredRun
from offload_repro.produce.predicted import model_profile
from offload_repro.produce.predicted.target_rates import rates, settings
from offload_repro.produce.validation.against_measured import groups, read_measured, smallest_of


def write_run_profiles(
    runs: list[MeasuredRun], compiled: dict[str, dict[str, Any]], out: Path, speed: dict[str, Any]
) -> dict[str, Any]:
    """The profile of every run's program that compiled and fits, written whole to `out`; per run,
    what its entries were costed at (or why it has none)."""
    measured, _ = read_measured(runs, compiled, speed, keep_parsed=True)
    central = settings(speed)[0]
    record: dict[str, Any] = {}
    written: dict[str, str] = {}  # fingerprint -> its entries: runs that share a program share them
    for entries in groups(measured).values():
        calibrating = smallest_of(entries)
        rate = calibrating.calibrate(central, speed)
        for entry in sorted(entries, key=lambda e: (e.run.gpus, e.run.id)):
            if rate is None:
                record[entry.run.id] = {"skipped": f"no rate within the peak reaches {calibrating.run.id}"}
                continue
            program = entry.program
            text = written.setdefault(
                program["fingerprint"],
                model_profile.costed(program, rates(entry.target, rate, central, entry.run.precision, speed)),
            )
            record[entry.run.id] = model_profile.entry_record(program, text, rate, calibrating.run.id)
    model_profile.write_file(out, record, list(written.values()))
    return record
