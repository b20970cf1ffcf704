"""A latency profile for XLA's scheduler, from the step-time model's own costs.

NVIDIA's MaxText recipes schedule each timed run with a profile recorded on the cluster (PGLE):
the measured time of every instruction, which XLA's latency-hiding scheduler uses in place of its
default cost model (one flat cost per kind of instruction). A compile ahead of time has no run to
record, so its scheduler falls back to that default. Here the profile is written from the model
instead: every instruction of each compiled program costed as the model replays it at the central
setting, the compute rate fitted on the family's first published throughput that a rate within the
dense peak reaches. Compiled again with it (`--xla_gpu_pgle_profile_file_or_directory_path`), the
same program is scheduled as a profile-guided run could be.

XLA reads the profile as a ProfiledInstructionsProto in text form: one `costs` entry per
instruction, its name prefixed by the fingerprint XLA gives the module just before scheduling
(`fingerprint_before_lhs`, printed in the compiled program), so that one file serves every program
and each compile takes only its own entries. An asynchronous transfer's cost is its `*-start`'s,
which XLA takes as the latency to its `*-done`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Row, Target
from offload_repro.core.files import write_atomically
from offload_repro.core.maxtext_args import xla_flags
from offload_repro.core.published import published_throughputs
from offload_repro.produce.compiled.hlo_text import Computation
from offload_repro.produce.compiled.program_cache import LHS_OFF
from offload_repro.produce.predicted import step_model
from offload_repro.produce.predicted.hlo_schedule import Event
from offload_repro.produce.predicted.leave_one_out import calibrate_row
from offload_repro.produce.predicted.prediction import SCHEDULED_AS, network_shape, read_program
from offload_repro.produce.predicted.target_rates import precisions, rates, settings

NO_FINGERPRINT = "the compiled program carries no fingerprint_before_lhs: XLA did not schedule it"


def fingerprint(hlo: str) -> str:
    """The fingerprint XLA gave the module before scheduling it, as printed in the compiled program."""
    found = SCHEDULED_AS.search(hlo)
    if not found:
        raise DataError(NO_FINGERPRINT)
    return found.group(1)


def instruction_costs(
    computations: dict[str, Computation],
    timeline: dict[str, list[list[Event]]],
    events: dict[str, list[Event]],
    at: step_model.Rates,
) -> dict[str, float]:
    """Each scheduled instruction's cost in microseconds, as the model replays it at `at`: compute
    its roofline time, a transfer (an async start, a synchronous collective or copy) its time on its
    link, a loop its trips times its body's replayed time. Instructions that cost nothing are left
    out, as a recorded profile has no entry for what never ran on the device."""
    replay = step_model.Replay(events, at)
    costs: dict[str, float] = {}
    for name, per_instruction in timeline.items():
        for instruction, instruction_events in zip(computations[name].instructions, per_instruction, strict=True):
            seconds = 0.0
            for event in instruction_events:
                if event.kind == "compute":
                    seconds += at.compute_seconds(event, charge_unspent=False)
                elif event.kind in ("start", "transfer"):
                    seconds += at.seconds(event)
                elif event.kind == "loop":
                    seconds += event.times * replay.computation(event.body)
            if seconds > 0:
                costs[instruction.name] = seconds * 1e6
    return costs


def profile_text(fingerprint_of: str, costs: dict[str, float]) -> str:
    """The costs as ProfiledInstructionsProto text entries for the module `fingerprint_of`."""
    return "".join(
        f'costs {{ name: "{fingerprint_of}::{name}" cost_us: {cost:.3f} }}\n' for name, cost in sorted(costs.items())
    )


def profile_rate(
    family: str,
    programs: dict[str, dict[str, Any]],
    rows: dict[str, Row],
    published: dict[str, dict[str, dict[str, Any]]],
    target: Target,
    speed: dict[str, Any],
) -> tuple[float, str]:
    """(the compute rate, the row it was fitted on): the family's first published (or implied)
    throughput, in experiments/speed.yaml's leave_one_out order, that a rate within the dense peak
    reaches at the central setting on its default program."""
    for row_id, entry in published.get(family, {}).items():
        if row_id not in programs:
            continue
        precision = precisions(speed, rows[row_id], target)[0]
        try:
            rate = calibrate_row(programs[row_id], entry["tflops"], target, speed, precision, only_central=True)[0]
        except ValueError:  # above the peak, or out of reach: the next throughput calibrates
            continue
        if rate:
            return rate, row_id
    raise DataError(f"no published throughput of family '{family}' calibrates the model within its dense peak")


def costed(program: dict[str, Any], at: step_model.Rates) -> str:
    """A program's profile entries (read with `read_program(..., keep_parsed=True)`), costed at `at`."""
    if not program["fingerprint"]:
        raise DataError(NO_FINGERPRINT)
    costs = instruction_costs(program["computations"], program["timeline"], program["events"], at)
    return profile_text(program["fingerprint"], costs)


def entry_record(program: dict[str, Any], text: str, rate: float, fitted_on: str) -> dict[str, Any]:
    """What a program's profile entries (`text`) were costed at, as `entry_line` reads it."""
    return {
        "fingerprint": program["fingerprint"],
        "entries": text.count("\n"),
        "rate_tflops": rate / 1e12,
        "fitted_on": fitted_on,
    }


def entry_line(name: str, entry: dict[str, Any]) -> str:
    """What one row's (or run's) profile is, or why it has none, in a line."""
    if "skipped" in entry:
        return f"{name}: no profile: {entry['skipped']}"
    return (
        f"{name}: {entry['entries']} instructions of module {entry['fingerprint']}, compute at"
        f" {entry['rate_tflops']:.0f} TFLOP/s (fitted on {entry['fitted_on']})"
    )


def write_file(out: Path, record: dict[str, dict[str, Any]], entries: list[str]) -> None:
    """The profile, written whole: a comment line per row (`entry_line`), then the entries."""
    write_atomically(
        out, "".join(f"# {entry_line(name, entry)}\n" for name, entry in record.items()) + "".join(entries)
    )


def write_profile(
    rows: list[Row], target: Target, compiled: list[dict[str, Any]], out: Path, speed: dict[str, Any], claims: Path
) -> dict[str, Any]:
    """The profile of every compiled row of a target whose scheduler a profile can guide, written
    whole to `out`; per row, what its entries were costed at, or why it has none. A row that turns
    the latency-hiding scheduler off gets none: XLA would turn it on for a program with a profile."""
    by_id = {row.id: row for row in rows}
    shape = network_shape(target, speed)
    # every program, one that does not fit too: its schedule decides its memory
    programs = {
        result["row"]: read_program(result, shape, keep_parsed=True)
        for result in compiled
        if result["row"] in by_id and result["status"] == "ok"
    }
    published = published_throughputs(by_id, speed, claims)
    entries, record = [], {}
    for row_id, program in programs.items():
        row = by_id[row_id]
        if LHS_OFF in xla_flags(row):
            continue
        try:
            rate, fitted_on = profile_rate(row.family, programs, by_id, published, target, speed)
        except DataError as error:  # a run of a few rows may hold no throughput of a family: no profile
            record[row_id] = {"skipped": str(error)}
            continue
        # costed at the central setting, at the row's default GEMM precision
        text = costed(program, rates(target, rate, settings(speed)[0], precisions(speed, row, target)[0], speed))
        entries.append(text)
        record[row_id] = entry_record(program, text, rate, fitted_on)
    write_file(out, record, entries)
    return record
