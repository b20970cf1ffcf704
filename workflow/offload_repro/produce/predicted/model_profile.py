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

import gzip
import re
from pathlib import Path
from typing import Any, NamedTuple

from offload_repro.core.data import DataError, Row, Target
from offload_repro.core.files import write_atomically
from offload_repro.core.maxtext_args import xla_flags
from offload_repro.produce.compiled import hlo_text
from offload_repro.produce.compiled.hlo_text import Computation
from offload_repro.produce.compiled.program_cache import LHS_OFF, hlo_path
from offload_repro.produce.predicted import hlo_schedule, step_model
from offload_repro.produce.predicted.hlo_schedule import Event
from offload_repro.produce.predicted.leave_one_out import calibrate_row, published_throughputs
from offload_repro.produce.predicted.prediction import network_shape
from offload_repro.produce.predicted.target_rates import precisions, rates, settings

FINGERPRINT = re.compile(r'fingerprint_before_lhs="([0-9a-f]+)"')


def fingerprint(hlo: str) -> str:
    """The fingerprint XLA gave the module before scheduling it, as printed in the compiled program."""
    found = FINGERPRINT.search(hlo)
    if not found:
        raise DataError("the compiled program carries no fingerprint_before_lhs: XLA did not schedule it")
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


def central_rates(rate: float, row: Row, target: Target, speed: dict[str, Any]) -> step_model.Rates:
    """The rates a row's profile is costed at: the central setting, its default GEMM precision."""
    return rates(target, rate, settings(speed)[0], precisions(speed, row, target)[0], speed)


class Program(NamedTuple):
    computations: dict[str, Computation]
    timeline: dict[str, list[list[Event]]]
    replayed: dict[str, Any]  # what calibration replays: events, ideal_events, entry, model_flops
    fingerprint: str


def read_compiled(result: dict[str, Any], shape: tuple[int, int, int] | None) -> Program:
    """A compiled row's program, read once for its profile and its calibration."""
    with gzip.open(hlo_path(Path(result["program"]["file"])), "rt", encoding="utf-8") as handle:
        text = handle.read()
    computations = hlo_text.parse(text)
    timeline = hlo_schedule.timelines(computations, shape)
    events, ideal_events = hlo_schedule.schedules(computations, timeline)
    replayed = {
        "events": events,
        "ideal_events": ideal_events,
        "entry": hlo_text.entry_name(computations),
        "model_flops": result["model_tflops_per_device_per_step"] * 1e12,
    }
    return Program(computations, timeline, replayed, fingerprint(text))


def write_profile(
    rows: list[Row], target: Target, compiled: list[dict[str, Any]], out: Path, speed: dict[str, Any], claims: Path
) -> dict[str, Any]:
    """The profile of every compiled row of a target whose scheduler a profile can guide, written
    whole to `out`; per row, what its entries were costed at. A row that turns the latency-hiding
    scheduler off gets none: XLA would turn it on for a program with a profile."""
    by_id = {row.id: row for row in rows}
    shape = network_shape(target, speed)
    programs = {
        result["row"]: read_compiled(result, shape)
        for result in compiled
        if result["row"] in by_id
        and result["status"] == "ok"  # one that does not fit too: its schedule decides its memory
    }
    published = published_throughputs(by_id, speed, claims)
    replayed = {row_id: program.replayed for row_id, program in programs.items()}
    lines, record, skipped = [], {}, {}
    for row_id, program in programs.items():
        row = by_id[row_id]
        if LHS_OFF in xla_flags(row):
            continue
        try:
            rate, fitted_on = profile_rate(row.family, replayed, by_id, published, target, speed)
        except DataError as error:  # a run of a few rows may hold no throughput of a family: no profile
            skipped[row_id] = str(error)
            continue
        at = central_rates(rate, row, target, speed)
        costs = instruction_costs(program.computations, program.timeline, program.replayed["events"], at)
        lines.append(profile_text(program.fingerprint, costs))
        record[row_id] = {
            "fingerprint": program.fingerprint,
            "entries": len(costs),
            "rate_tflops": rate / 1e12,
            "fitted_on": fitted_on,
        }
    header = "".join(
        f"# {row_id}: {entry['entries']} instructions of module {entry['fingerprint']}, compute at"
        f" {entry['rate_tflops']:.0f} TFLOP/s (fitted on {entry['fitted_on']})\n"
        for row_id, entry in record.items()
    ) + "".join(f"# {row_id}: no profile: {why}\n" for row_id, why in skipped.items())
    write_atomically(out, header + "".join(lines))
    return record | {row_id: {"skipped": why} for row_id, why in skipped.items()}
