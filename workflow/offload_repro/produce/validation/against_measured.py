"""The step-time model against runs measured elsewhere: each run's compiled program replayed by the
same model and code as the source's rows (produce/predicted/), its step predicted and set against
the step it measured.

Calibrated as a user would, with no parameter per run: one compute rate per GPU and precision,
- (a) fitted on one run, the anchor experiments/validation.yaml names for its GPU, precision and
  model kind (calibrations.smallest.anchors), predicting every other run of that group;
- (b) every run of a GPU and precision in turn calibrating, predicting the others (every pair);
- (c) across hardware: the source's own calibration (its share of the dense peak on the source's
  hardware) at the run's own precision, carried to the runs' GPU by the targets' cited peaks and
  bandwidths; none where the source's rows give none at that precision (the run says why).
Beside the full model, the simpler models of its ablation (leave_one_out.MODELS), each calibrated
the same ways, so that each term shows what it earns on real hardware; the simplest, counted FLOPs
over one rate, is the model to beat. The same calibration (a) costs the runs' programs for the
latency profile they are compiled again with (write_run_profiles).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Target, did_you_mean
from offload_repro.core.error_band import widened
from offload_repro.core.measured_elsewhere import VALIDATION_FILE, MeasuredRun, gpu_of, target_for
from offload_repro.core.validation_record import VALIDATION_RUNS, carried_errors, carry_band, unrecorded_carries
from offload_repro.produce.predicted import model_profile, step_model
from offload_repro.produce.predicted.leave_one_out import MODELS, rates_from, summarised
from offload_repro.produce.predicted.prediction import network_shape, read_program
from offload_repro.produce.predicted.source_calibration import source_calibration
from offload_repro.produce.predicted.target_rates import Setting, peak_flops, rates, replayed, settings
from offload_repro.produce.validation.since_record import among, moved_runs, since_record_lines

CALIBRATIONS = ("smallest", "every_run", "across_hardware")
SIMPLE = MODELS[0][0]  # counted FLOPs over one rate
# a run's fields its line carries under their own names
RUN_FIELDS = ("source", "target", "kind", "family", "source_family", "model", "precision", "gpus", "nodes")
ANCHORS_FIELD = "calibrations.smallest.anchors"
# what calibration (a) fits one rate for: GPU, precision and model kind (dense or MoE)
Group = tuple[str, str, str]


def anchor_group(run: MeasuredRun, target: Target | None = None) -> Group:
    return gpu_of(run, target), run.precision, run.kind


def described(group: Group) -> str:
    gpu, precision, kind = group
    return f"{precision} {kind} runs on {gpu}"


def named_anchors(runs: list[MeasuredRun], validation: dict[str, Any]) -> dict[Group, str]:
    """Each group's anchor for calibration (a), as experiments/validation.yaml names it: a run of the
    group it anchors, one per group. Named, never chosen by size or id, so that a run added changes no
    other run's anchor; a group none names has no anchor."""
    by_id = {run.id: run for run in runs}
    found: dict[Group, str] = {}
    for index, anchor in enumerate(validation["calibrations"]["smallest"]["anchors"]):
        where = f"{VALIDATION_FILE}: field '{ANCHORS_FIELD}[{index}]"
        group = (anchor["gpu"], anchor["precision"], anchor["kind"])
        run = by_id.get(anchor["run"])
        if run is None:
            raise DataError(
                f"{where}.run': '{anchor['run']}' names no run of experiments/measured-elsewhere/, so"
                f" {described(group)} would have no anchor" + did_you_mean(anchor["run"], by_id)
            )
        if anchor_group(run) != group:
            raise DataError(
                f"{where}.run': '{run.id}' is one of the {described(anchor_group(run))}, not of the"
                f" {described(group)} it is named to anchor"
            )
        if group in found:
            raise DataError(f"{where}': a second anchor of the {described(group)} (the first: '{found[group]}')")
        found[group] = run.id
    return found


@dataclass(frozen=True)
class Measured:
    """A run with its program, ready to replay."""

    run: MeasuredRun
    target: Target
    program: dict[str, Any]

    @property
    def gpu(self) -> str:
        return gpu_of(self.run, self.target)

    @property
    def group(self) -> tuple[str, str]:
        """GPU and precision: what (b) fits one rate for, whichever file the runs come from."""
        return self.gpu, self.run.precision

    @property
    def anchor_group(self) -> Group:
        """GPU, precision and model kind: what (a) fits one rate for, on the group's named anchor."""
        return anchor_group(self.run, self.target)

    def step_s(self, rate: float, setting: Setting, speed: dict[str, Any], free: tuple[str, ...] = ()) -> float:
        at = rates(self.target, rate, setting, self.run.precision, speed).free(*free)
        return step_model.step_seconds(replayed(self.program, at), self.program["entry"], at)

    def calibrate(self, setting: Setting, speed: dict[str, Any], free: tuple[str, ...] = ()) -> float | None:
        """The compute rate at which this run's predicted step is its measured one; None where no rate
        within the precision's dense peak reaches it."""
        at = rates(self.target, 1.0, setting, self.run.precision, speed).free(*free)
        measured = self.program["model_flops"] / self.run.step_seconds
        try:
            rate = step_model.calibrate(
                replayed(self.program, at), self.program["entry"], self.program["model_flops"], measured, at
            )
        except ValueError:
            return None
        peak = peak_flops(self.target, self.run.precision, speed)
        return None if peak and rate > peak else rate


def read_measured(
    runs: list[MeasuredRun], compiled: dict[str, dict[str, Any]], speed: dict[str, Any], keep_parsed: bool = False
) -> tuple[dict[str, Measured], dict[str, dict[str, Any]]]:
    """(run id -> run with its program, run id -> why it has no prediction); a program shared by
    several runs is read once; `keep_parsed`: as `read_program`."""
    found: dict[str, Measured] = {}
    failed: dict[str, dict[str, Any]] = {}
    programs: dict[str, dict[str, Any]] = {}
    for run in runs:
        result = compiled.get(run.id)
        if result is None:
            failed[run.id] = {"status": "error", "message": "not compiled"}
        elif result["status"] != "ok":
            failed[run.id] = {"status": "error", "message": f"no compiled program: {result.get('message')}"}
        elif not result["fits"]:
            failed[run.id] = {
                "status": "oom",
                "message": f"out of memory as compiled ({-result['margin_gib']:.1f} GiB over)",
            }
        else:
            target = target_for(run)
            key = result["program"]["key"]
            if key not in programs:
                programs[key] = read_program(result, network_shape(target, speed), keep_parsed)
            found[run.id] = Measured(run, target, programs[key])
    return found, failed


def error(predicted_s: float, measured_s: float) -> float:
    return predicted_s / measured_s - 1


def throughput_error(step_error: float) -> float:
    """A step-time error as the error of the throughput it gives: predicted / measured - 1 of FLOPs
    per second, which is measured step / predicted step - 1 (a step 17.8% short is +21.6% throughput)."""
    return 1 / (1 + step_error) - 1


def source_family(line: dict[str, Any]) -> str:
    """The source's family of a run's kind, from its line (a line written before a run's own family
    was recorded apart names the source's as its family)."""
    return line.get("source_family", line["family"])


def real_hardware_errors(
    pairs: list[dict[str, Any]], runs: list[dict[str, Any]], kinds: dict[str, Any]
) -> dict[str, dict[str, Any] | None]:
    """Per kind of claim (experiments/validation.yaml, kinds): the largest throughput error over the
    pairs of runs of that kind where one run calibrates and predicts another of its own model and
    precision (calibration (b) within one model: the source's claims compare settings of one model),
    with that pair; None for a kind no such pair measures."""
    by_run = {run["run"]: run for run in runs}
    found: dict[str, dict[str, Any] | None] = dict.fromkeys(kinds)
    for name, kind in kinds.items():
        mine = [
            pair
            for pair in pairs
            if source_family(by_run[pair["predicted"]]) in kind["families"]
            and by_run[pair["predicted"]]["model"] == by_run[pair["calibrated_on"]]["model"]
        ]
        if not mine:
            continue
        worst = max(mine, key=lambda pair: abs(throughput_error(pair["error"])))
        found[name] = {
            "throughput_error": abs(throughput_error(worst["error"])),
            "pairs": len(mine),
            "worst": {
                "calibrated_on": worst["calibrated_on"],
                "predicted": worst["predicted"],
                "step_error": worst["error"],
                "throughput_error": throughput_error(worst["error"]),
            },
        }
    return found


def unrecorded(computed: dict[str, dict[str, Any] | None], kinds: dict[str, Any], where: str) -> list[str]:
    """Where the error this stage computed, or the number of pairs it is the largest over, differs
    from what `where` records for a kind (the error to four decimals, as recorded): each as the
    field and the values to record."""
    found = []
    for name, kind in kinds.items():
        recorded, mine = kind["recorded_error"], computed.get(name)
        if recorded is None and mine is None:
            continue
        if (
            recorded is None
            or mine is None
            or round(mine["throughput_error"], 4) != recorded["throughput_error"]
            or mine["pairs"] != recorded["pairs"]
        ):
            value = "null" if mine is None else f"{mine['throughput_error']:.4f} over {mine['pairs']} pairs"
            was = "null" if recorded is None else f"{recorded['throughput_error']:.4f} over {recorded['pairs']} pairs"
            found.append(f"{where}: field 'kinds.{name}.recorded_error': records {was}, this stage computes {value}")
    return found


def groups(measured: dict[str, Measured]) -> dict[tuple[str, str], list[Measured]]:
    """The runs by GPU and precision: (b)'s groups."""
    found: dict[tuple[str, str], list[Measured]] = {}
    for entry in measured.values():
        found.setdefault(entry.group, []).append(entry)
    return found


def anchor_groups(measured: dict[str, Measured]) -> dict[Group, list[Measured]]:
    """The runs by GPU, precision and model kind: (a)'s groups."""
    found: dict[Group, list[Measured]] = {}
    for entry in measured.values():
        found.setdefault(entry.anchor_group, []).append(entry)
    return found


def anchors_of(measured: dict[str, Measured], named: dict[Group, str]) -> dict[Group, Measured]:
    """Each group's named anchor that has a program (one that did not compile or fit anchors nothing)."""
    return {group: measured[run_id] for group, run_id in named.items() if run_id in measured}


def no_anchor(group: Group, named: dict[Group, str], failed: dict[str, dict[str, Any]]) -> str | None:
    """Why calibration (a) predicts no run of `group`, in words; None where it does (its named
    anchor has a program)."""
    if group not in named:
        return f"no anchor is named for the {described(group)} ({VALIDATION_FILE}, {ANCHORS_FIELD})"
    if (why := failed.get(named[group])) is not None:
        return f"the anchor of the {described(group)}, {named[group]}, has no prediction ({why['message']})"
    return None


def calibrated_pairs(
    group: list[Measured], speed: dict[str, Any], free: tuple[str, ...], calibrators: list[Measured]
) -> list[dict[str, Any]]:
    """Each of `calibrators` fitted at the central setting (with `free` terms left out), predicting
    every other run of its group."""
    central = settings(speed)[0]
    pairs = []
    for calibrating in calibrators:
        rate = calibrating.calibrate(central, speed, free)
        if rate is None:
            continue
        for predicted in (entry for entry in group if entry is not calibrating):
            step = predicted.step_s(rate, central, speed, free)
            pairs.append(
                {
                    "calibrated_on": calibrating.run.id,
                    "predicted": predicted.run.id,
                    "measured_step_s": predicted.run.step_seconds,
                    "predicted_step_s": step,
                    "error": error(step, predicted.run.step_seconds),
                }
            )
    return pairs


def by_calibration(
    measured: dict[str, Measured], speed: dict[str, Any], anchors: dict[Group, Measured], free: tuple[str, ...] = ()
) -> dict[str, list[dict[str, Any]]]:
    """The pairs of calibrations (a) (each group's anchor, `anchors`) and (b) for one model (its
    `free` terms left out)."""
    found: dict[str, list[dict[str, Any]]] = {"smallest": [], "every_run": []}
    for group, entries in anchor_groups(measured).items():
        if group in anchors:
            found["smallest"] += calibrated_pairs(entries, speed, free, [anchors[group]])
    for entries in groups(measured).values():
        found["every_run"] += calibrated_pairs(entries, speed, free, entries)
    return found


def summary(pairs: list[dict[str, Any]], measured: dict[str, Measured] | None = None) -> dict[str, Any]:
    """Mean absolute and largest error over the pairs, in all and, with `measured`, the runs they
    predict and those runs' GPUs (what the page says the errors are over), and per precision and
    model of the run each predicts."""
    found: dict[str, Any] = {**summarised([abs(p["error"]) for p in pairs]), "pairs": len(pairs)}
    if measured:
        predicted = {p["predicted"] for p in pairs}
        found["runs"] = len(predicted)
        found["gpus"] = sorted({measured[run_id].gpu for run_id in predicted})
        kinds = [f"{measured[p['predicted']].run.precision} {measured[p['predicted']].run.model}" for p in pairs]
        found["by"] = {
            k: summary([p for p, of in zip(pairs, kinds, strict=True) if of == k]) for k in sorted(set(kinds))
        }
    return found


def errors_by_model(
    pairs_of: dict[str, dict[str, list[dict[str, Any]]]], measured: dict[str, Measured]
) -> dict[str, dict[str, Any]]:
    """Each model's errors under calibrations (a) and (b), in all and per precision and model."""
    return {
        name: {calibration: summary(pairs[calibration], measured) for calibration in ("smallest", "every_run")}
        for name, pairs in pairs_of.items()
    }


def across_hardware(
    measured: dict[str, Measured],
    speed: dict[str, Any],
    source: dict[str, Any] | None,
    calibration_target: Target,
    validation: dict[str, Any],
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """(c) Each run at the source's calibration of its family at the run's own precision, carried by
    share of peak: its step at every setting (None where the calibration reaches no rate there), and
    the band of the measured step that the error such a carry was measured to have allows around the
    settings' steps (experiments/validation.yaml, recorded per family and precision; none where that
    carry is unmeasured). Beside it, per run (c) does not predict, why, in words: a share of one
    precision's peak is never carried to another."""
    found, none = {}, {}
    for run_id, entry in measured.items():
        family = entry.run.source_family  # the source's of its kind: its own (mixtral, say) has no rows
        carried = source_calibration(source, family, entry.run.precision, speed)
        if carried.calibration is None:
            none[run_id] = carried.none
            continue
        rates_of = rates_from(carried.calibration, entry.target, calibration_target, entry.run.precision, speed)
        if not rates_of:
            none[run_id] = (
                f"experiments/targets/{entry.target.name}.yaml states no {entry.run.precision} peak"
                " (hardware.peak_dense_tflops) to carry a share of peak to"
            )
            continue
        steps = band(entry, rates_of, speed)
        error, why = carry_band(validation, family, entry.run.precision)
        found[run_id] = {
            "calibrated_on": carried.calibrated_on,
            "calibration_precision": entry.run.precision,
            "share_of_peak": carried.share_of_peak,
            "step_s": steps,
            "band": carried_band([step for step in steps if step], error),
            "band_why": why,
        }
    return found, none


def carried_band(steps: list[float], error: float | None) -> dict[str, Any] | None:
    """The measured step a carried prediction allows: its settings' steps widened by the largest
    step error the carry was measured to have, `error` (predicted / measured - 1 within ±e, so
    measured within predicted / (1 + e) and predicted / (1 - e)); None where it is unmeasured."""
    if not steps or error is None:
        return None
    return {"error": error, "low_s": widened(min(steps), error)[0], "high_s": widened(max(steps), error)[1]}


def fitted_rates(
    anchors: dict[Group, Measured],
    fitted: dict[Group, list[float | None]],
    carried: dict[str, dict[str, Any]],
    speed: dict[str, Any],
) -> list[dict[str, Any]]:
    """Per GPU, precision and model kind with an anchor, the rate calibration (a) fits at the central
    setting and its share of that precision's dense peak: what the runs reach, beside the share (c)
    carries to them (None where the source's calibration carries none)."""
    found = []
    for group, calibrating in sorted(anchors.items()):
        rate, peak = fitted[group][0], peak_flops(calibrating.target, calibrating.run.precision, speed)
        source = carried.get(calibrating.run.id)
        found.append(
            {
                "gpu": calibrating.gpu,
                "target": calibrating.target.name,
                "precision": calibrating.run.precision,
                "kind": calibrating.run.kind,
                "calibrated_on": calibrating.run.id,
                "effective_tflops": rate / 1e12 if rate else None,
                "share_of_peak": rate / peak if rate and peak else None,
                "carried": source
                and {key: source[key] for key in ("calibrated_on", "calibration_precision", "share_of_peak")},
            }
        )
    return found


def band(entry: Measured, by_setting: list[float | None], speed: dict[str, Any]) -> list[float | None]:
    """`entry`'s step at every setting, at the compute rate given there (None where none is)."""
    return [
        entry.step_s(rate, setting, speed) if rate else None
        for rate, setting in zip(by_setting, settings(speed), strict=True)
    ]


def where_off(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group of calibration (a) (GPU, precision and model kind, whichever files its runs come
    from), the run (a) predicts worst, and the term of the step beside compute whose share differs
    most from that in the run it was calibrated on: where the model is off, and which term carries it."""
    by_id = {row["run"]: row for row in rows if row["status"] == "ok"}
    worst: dict[Group, dict[str, Any]] = {}
    for row in by_id.values():
        key, off = (row["gpu"], row["precision"], row["kind"]), row["smallest"]["error"]
        if off and abs(off) > abs(worst[key]["smallest"]["error"] if key in worst else 0):
            worst[key] = row
    found = []
    for (gpu, precision, kind), row in sorted(worst.items()):
        calibrating = by_id[row["smallest"]["calibrated_on"]]
        mine, theirs = row["breakdown"], calibrating["breakdown"]
        if not mine or not theirs:
            continue
        # compute's share is what the others leave: the term is the one beside it that moved most
        term = max(step_model.TERMS[1:], key=lambda t: abs(mine[t] / mine["step_s"] - theirs[t] / theirs["step_s"]))
        found.append(
            {
                "gpu": gpu,
                "precision": precision,
                "kind": kind,
                "target": row["target"],  # the worst run's target file
                "run": row["run"],
                "error": row["smallest"]["error"],
                "calibrated_on": calibrating["run"],
                "term": term,
                "term_s": mine[term],
                "step_s": mine["step_s"],
                "calibrating_term_s": theirs[term],
                "calibrating_step_s": theirs["step_s"],
            }
        )
    return found


def identity(run: MeasuredRun) -> dict[str, Any]:
    """What a run's line says of the run itself, predicted or not."""
    return {
        "run": run.id,
        "gpu": gpu_of(run),
        **{key: getattr(run, key) for key in RUN_FIELDS},
        "measured_step_s": run.step_seconds,
        "citation": run.citation,
    }


def run_line(
    entry: Measured,
    anchors: dict[Group, Measured],
    fitted_of: dict[Group, list[float | None]],
    pairs_of: dict[str, dict[str, list[dict[str, Any]]]],
    across: dict[str, Any] | None,
    speed: dict[str, Any],
    unanchored: str | None = None,
    not_carried: str | None = None,
) -> dict[str, Any]:
    """A predicted run: its step under calibration (a) (its group's named anchor, and the rates that
    run fits at every setting; none where the group has no anchor, `unanchored` saying why) at every
    setting and by every model of the ablation, its errors under (b) and (c) (none where (c) carries
    nothing to it, `not_carried` saying why), and its step's terms at the central setting. (Its
    error from runs of its own model, which predicted bands take, is real_hardware_errors' over
    every pair.)"""
    run, calibrating = entry.run, anchors.get(entry.anchor_group)
    fitted = fitted_of[entry.anchor_group] if calibrating else [None] * len(settings(speed))
    own = {name: [p for p in pairs["smallest"] if p["predicted"] == run.id] for name, pairs in pairs_of.items()}
    every = [p for p in pairs_of[MODELS[-1][0]]["every_run"] if p["predicted"] == run.id]
    steps = band(entry, fitted, speed)
    # the calibrating run's predicted step is its measured one by construction: (a) tests nothing there
    calibrates = calibrating is entry
    at = rates(entry.target, fitted[0], settings(speed)[0], run.precision, speed) if fitted[0] else None
    return {
        **identity(run),
        "status": "ok",
        "message": None,
        "model_tflops": entry.program["model_flops"] / 1e12,
        "counted_tflops": (entry.program["flops"].total - entry.program["flops"].unspent) / 1e12,
        "smallest": {
            "calibrated_on": calibrating.run.id if calibrating else None,
            "step_s": steps,
            "error": error(steps[0], run.step_seconds) if steps[0] and not calibrates else None,
            "by_model": {name: found[0]["error"] if found else None for name, found in own.items()},
        },
        "untested": untested(entry, calibrates, every, unanchored),
        "every_run": {"pairs": len(every), **summarised([abs(p["error"]) for p in every])},
        "across_hardware": across
        and {**across, "error": error(across["step_s"][0], run.step_seconds) if across["step_s"][0] else None},
        "not_carried": not_carried,
        "breakdown": step_model.breakdown(replayed(entry.program, at), entry.program["entry"], at) if at else None,
    }


def untested(
    entry: Measured, calibrates: bool, every: list[dict[str, Any]], unanchored: str | None = None
) -> str | None:
    """Why no calibration of the run's own GPU tests its prediction, in words; None where one does.
    `unanchored`: why (a) predicts no run of its group, where it predicts none."""
    gpu, precision = entry.group
    if unanchored:
        also = (
            "(b) does, from the other runs of its GPU and precision"
            if every
            else "no other run of its GPU and precision tests it (only (c), across hardware, predicts it)"
        )
        return f"{unanchored}: (a) does not predict it; {also}"
    if calibrates and not every:
        return (
            f"the only run of {precision} on {gpu}: it calibrates the model there, and no other run of its GPU"
            " and precision tests it (only (c), across hardware, predicts it)"
        )
    if calibrates:
        return (
            f"calibrates (a) for the {described(entry.anchor_group)} as their named anchor: its own measured step"
            " fixes the rate, so (a) does not test it; (b) does, from the other runs"
        )
    return None


def compile_record(validation: dict[str, Any], compiled: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """How the runs were compiled here, and the flags of theirs this XLA no longer knows."""
    dropped: set[str] = set()
    # a run file's own substitutions, each with the runs it applied to
    own: dict[tuple[str, str, str], dict[str, Any]] = {}
    for run_id, result in sorted(compiled.items()):
        record = result.get("measured_elsewhere") or {}
        dropped.update(record.get("dropped_unknown_flags", []))
        for rule in record.get("substitutions", []):
            if rule.get("stated_in", VALIDATION_FILE) != VALIDATION_FILE:
                key = (rule["stated_in"], rule["setting"], str(rule["value"]))
                own.setdefault(key, {**rule, "runs": []})["runs"].append(run_id)
    return {
        **{key: validation["compile"][key] for key in ("substitutions", "compile_only_flags", "one_slice")},
        "run_substitutions": list(own.values()),
        "dropped_unknown_flags": sorted(dropped),
    }


def write_run_profiles(
    runs: list[MeasuredRun],
    compiled: dict[str, dict[str, Any]],
    out: Path,
    speed: dict[str, Any],
    validation: dict[str, Any],
) -> dict[str, Any]:
    """A latency profile of every run's program that compiled and fits, written whole to `out`; per run,
    what its entries were costed at (or why it has none). The runs' timed steps were scheduled by a
    profile recorded on their cluster (PGLE), which is not published: this one is the model's costs of
    each program (produce/predicted/model_profile.py), compute at the rate calibration (a) fits at the
    central setting (none for a group without an anchor). One file serves every run: each entry is
    named by its program's fingerprint."""
    named = named_anchors(runs, validation)
    measured, failed = read_measured(runs, compiled, speed, keep_parsed=True)
    anchors = anchors_of(measured, named)
    central = settings(speed)[0]
    record: dict[str, Any] = {}
    written: dict[str, str] = {}  # fingerprint -> its entries: runs that share a program share them
    for group, entries in anchor_groups(measured).items():
        calibrating = anchors.get(group)
        rate = calibrating.calibrate(central, speed) if calibrating else None
        for entry in sorted(entries, key=lambda e: (e.run.gpus, e.run.id)):
            if calibrating is None:
                record[entry.run.id] = {"skipped": f"{no_anchor(group, named, failed)}: (a) fits no rate for it"}
                continue
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


def profile_guided(
    runs: list[MeasuredRun], profiled: dict[str, dict[str, Any]], speed: dict[str, Any], named: dict[Group, str]
) -> dict[str, Any] | None:
    """The same runs, each compiled again with a profile of the model's own costs of its program
    (write_run_profiles), as the runs were scheduled with a profile recorded on the
    cluster: the full model's and the simple model's errors under calibrations (a) and (b), and what
    XLA found of each program in the profile."""
    measured, failed = read_measured(runs, profiled, speed)
    if not measured:
        return None
    anchors = anchors_of(measured, named)
    pairs_of = {name: by_calibration(measured, speed, anchors, free) for name, free in (MODELS[0], MODELS[-1])}
    return {
        "errors": errors_by_model(pairs_of, measured),
        "matched": {
            run_id: (result.get("latency_profile") or {}).get("matched") for run_id, result in profiled.items()
        },
        "not_predicted": failed,
    }


def validate_model(
    runs: list[MeasuredRun],
    compiled: dict[str, dict[str, Any]],
    speed: dict[str, Any],
    validation: dict[str, Any],
    source: dict[str, Any] | None,
    calibration_target: Target | None,
    profiled: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The model against the runs (`compiled`); `profiled`: the runs compiled again with a profile of
    the model's costs, whose errors are reported beside (`profile_guided`)."""
    named = named_anchors(runs, validation)
    measured, failed = read_measured(runs, compiled, speed)
    if not measured:
        raise DataError("no measured run compiled and fits: nothing to validate the model against")
    full = MODELS[-1][0]
    anchors = anchors_of(measured, named)
    pairs_of = {name: by_calibration(measured, speed, anchors, free) for name, free in MODELS}
    carried, not_carried = (
        across_hardware(measured, speed, source, calibration_target, validation) if calibration_target else ({}, {})
    )
    # the compute rate each group's anchor fits at every setting (None where none reaches its step)
    fitted = {
        group: [entry.calibrate(setting, speed) for setting in settings(speed)] for group, entry in anchors.items()
    }
    rows = [
        run_line(
            measured[run.id],
            anchors,
            fitted,
            pairs_of,
            carried.get(run.id),
            speed,
            no_anchor(measured[run.id].anchor_group, named, failed),
            not_carried.get(run.id),
        )
        if run.id in measured
        else {**identity(run), **failed[run.id]}
        for run in runs
    ]
    across_pairs = [
        {
            "predicted": run_id,
            "family": measured[run_id].run.source_family,
            "precision": found["calibration_precision"],
            "error": error(found["step_s"][0], measured[run_id].run.step_seconds),
        }
        for run_id, found in carried.items()
        if found["step_s"][0]
    ]
    every_run = pairs_of[full]["every_run"]
    mine = set(validation["recorded_runs"])
    found = {
        "evidence": "validation",
        "status": "ok",
        "message": None,
        "runs": rows,
        "calibrations": {name: dict(validation["calibrations"][name]) for name in CALIBRATIONS},
        "errors": {
            "model": full,
            "simple_model": SIMPLE,
            "by_model": errors_by_model(pairs_of, measured),
            "across_hardware": {
                **summary(across_pairs, measured),
                "by_carry": carried_errors(across_pairs, VALIDATION_RUNS),
            },
        },
        "pairs": {calibration: pairs_of[full][calibration] for calibration in ("smallest", "every_run")},
        "real_hardware_error": real_hardware_errors(every_run, rows, validation["kinds"]),
        # over the runs experiments/validation.yaml's errors were recorded over: what the record is
        # checked against, and what the runs added beside them moved
        "since_record": {
            "recorded_runs": sorted(mine),
            "added": [run.id for run in runs if run.id not in mine],
            "moved": moved_runs({c: pairs_of[full][c] for c in ("smallest", "every_run")}, mine),
            "errors": {c: summary(among(pairs_of[full][c], mine), measured) for c in ("smallest", "every_run")},
            "real_hardware_error": real_hardware_errors(among(every_run, mine), rows, validation["kinds"]),
            "across_hardware": carried_errors(
                [pair for pair in across_pairs if pair["predicted"] in mine], VALIDATION_RUNS
            ),
        },
        "fitted_rates": fitted_rates(anchors, fitted, carried, speed),
        "where_off": where_off(rows),
        "settings": [list(setting) for setting in settings(speed)],
        "compile": compile_record(validation, compiled),
        "profile_guided": profile_guided(runs, profiled, speed, named) if profiled else None,
    }
    found["since_record"] |= since_record_words(found, validation)
    return found


def since_record_words(found: dict[str, Any], validation: dict[str, Any]) -> dict[str, Any]:
    """With runs added beside the recorded ones, what recording with them would change (each recorded
    error the stage computes otherwise over all runs: reported, never applied); and what they moved,
    in the words the console and the page give."""
    since = found["since_record"]
    to_record = []
    if since["added"]:
        to_record = unrecorded(found["real_hardware_error"], validation["kinds"], VALIDATION_FILE)
        to_record += unrecorded_carries(found["errors"]["across_hardware"]["by_carry"], VALIDATION_RUNS, validation)
    full = found["errors"]["by_model"][found["errors"]["model"]]
    return {"to_record": to_record, "lines": since_record_lines(since | {"to_record": to_record}, full)}
