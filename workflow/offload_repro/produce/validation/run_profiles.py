"""A latency profile for the published runs' programs, as they were scheduled: each run's timed step
was scheduled with a profile recorded on its cluster (PGLE), which is not published, so the profile
here is the step-time model's costs of each run's program (produce/predicted/model_profile.py),
compute at the rate fitted on the smallest run of its GPU and precision (calibration (a)) at the
central setting. One file serves every run: each entry is named by its program's fingerprint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.files import write_atomically
from offload_repro.core.measured_elsewhere import MeasuredRun, target_for
from offload_repro.produce.predicted import model_profile
from offload_repro.produce.predicted.prediction import network_shape
from offload_repro.produce.predicted.target_rates import rates, settings
from offload_repro.produce.validation.against_measured import groups, read_measured, smallest_of


def write_run_profiles(
    runs: list[MeasuredRun], compiled: dict[str, dict[str, Any]], out: Path, speed: dict[str, Any]
) -> dict[str, Any]:
    """The profile of every run's program that compiled and fits, written whole to `out`; per run,
    what its entries were costed at (or why it has none)."""
    measured, _ = read_measured(runs, compiled, speed)
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
            target = target_for(entry.run)
            program = model_profile.read_compiled(compiled[entry.run.id], network_shape(target, speed))
            at = rates(target, rate, central, entry.run.precision, speed)
            costs = model_profile.instruction_costs(
                program.computations, program.timeline, program.replayed["events"], at
            )
            written.setdefault(program.fingerprint, model_profile.profile_text(program.fingerprint, costs))
            record[entry.run.id] = {
                "fingerprint": program.fingerprint,
                "entries": len(costs),
                "rate_tflops": rate / 1e12,
                "fitted_on": calibrating.run.id,
            }
    header = "".join(
        f"# {run_id}: no profile: {entry['skipped']}\n"
        if "skipped" in entry
        else f"# {run_id}: {entry['entries']} instructions of module {entry['fingerprint']}, compute at"
        f" {entry['rate_tflops']:.0f} TFLOP/s (fitted on {entry['fitted_on']})\n"
        for run_id, entry in record.items()
    )
    write_atomically(out, header + "".join(written.values()))
    return record
