"""The step-time model against runs measured elsewhere: each run's compiled program replayed by the
same model and code as the source's rows (produce/predicted/), its step predicted and set against
the step it measured.

Calibrated as a user would, with no parameter per run: one compute rate per GPU and precision,
- (a) fitted on one run, the smallest of its GPU and precision, predicting every other;
- (b) every run of a GPU and precision in turn calibrating, predicting the others (every pair);
- (c) across hardware: the source's own calibration (its share of the dense peak on the source's
  hardware) carried to the runs' GPU by the targets' cited peaks and bandwidths.
Beside the full model, the simpler models of its ablation (leave_one_out.MODELS), each calibrated
the same ways, so that each term shows what it earns on real hardware; the simplest, counted FLOPs
over one rate, is the model to beat. The same calibration (a) costs the runs' programs for the
latency profile they are compiled again with (write_run_profiles).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Target
from offload_repro.core.error_band import widened
from offload_repro.core.measured_elsewhere import VALIDATION_FILE, MeasuredRun, target_for
from offload_repro.produce.predicted import model_profile, step_model
from offload_repro.produce.predicted.leave_one_out import MODELS, rates_from, summarised
from offload_repro.produce.predicted.prediction import network_shape, read_program
from offload_repro.produce.predicted.target_rates import Setting, peak_flops, rates, replayed, settings

CALIBRATIONS = ("smallest", "every_run", "across_hardware")
SIMPLE = MODELS[0][0]  # counted FLOPs over one rate
# a run's fields its line carries under their own names
RUN_FIELDS = ("source", "target", "kind", "family", "model", "precision", "gpus", "nodes")


@dataclass(frozen=True)
class Measured:
    """A run with its program, ready to replay."""

    run: MeasuredRun
    target: Target
    program: dict[str, Any]

    @property
    def gpu(self) -> str:
        """The GPU the run measured (its target's accelerator): two files of one GPU share it."""
        return self.target.spec["hardware"].get("accelerator") or self.run.target

    @property
    def group(self) -> tuple[str, str]:
        """GPU and precision: what one rate is fitted for, whichever file the runs come from."""
        return self.gpu, self.run.precision

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
            if by_run[pair["predicted"]]["family"] in kind["families"]
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
    """Where the error this stage computed differs from what `where` records for a kind (to four
    decimals, as recorded): each as the field and the value to record."""
    found = []
    for name, kind in kinds.items():
        recorded, mine = kind["recorded_error"], computed.get(name)
        if recorded is None and mine is None:
            continue
        if recorded is None or mine is None or round(mine["throughput_error"], 4) != recorded["throughput_error"]:
            value = "null" if mine is None else f"{mine['throughput_error']:.4f} over {mine['pairs']} pairs"
            was = "null" if recorded is None else f"{recorded['throughput_error']:.4f}"
            found.append(f"{where}: field 'kinds.{name}.recorded_error': records {was}, this stage computes {value}")
    return found


def unrecorded_across_hardware(errors: dict[str, Any], recorded: dict[str, Any], where: str) -> list[str]:
    """Where the across-hardware error this stage computed (`errors`, its summary) differs from what
    `where` records (to four decimals): the field and the value to record."""
    found = []
    for key in ("largest_abs", "mean_abs"):
        mine = errors.get(key)
        if mine is None or round(mine, 4) != recorded[key]:
            value = "none" if mine is None else f"{mine:.4f} over {errors.get('pairs')} pairs"
            found.append(
                f"{where}: field 'calibrations.across_hardware.recorded_error.{key}': records {recorded[key]:.4f},"
                f" this stage computes {value}"
            )
    return found


def smallest_of(group: list[Measured]) -> Measured:
    return min(group, key=lambda entry: (entry.run.gpus, entry.run.id))


def groups(measured: dict[str, Measured]) -> dict[tuple[str, str], list[Measured]]:
    found: dict[tuple[str, str], list[Measured]] = {}
    for entry in measured.values():
        found.setdefault(entry.group, []).append(entry)
    return found


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
    measured: dict[str, Measured], speed: dict[str, Any], free: tuple[str, ...] = ()
) -> dict[str, list[dict[str, Any]]]:
    """The pairs of calibrations (a) and (b) for one model (its `free` terms left out)."""
    found: dict[str, list[dict[str, Any]]] = {"smallest": [], "every_run": []}
    for group in groups(measured).values():
        found["smallest"] += calibrated_pairs(group, speed, free, [smallest_of(group)])
        found["every_run"] += calibrated_pairs(group, speed, free, group)
    return found


def summary(pairs: list[dict[str, Any]], measured: dict[str, Measured] | None = None) -> dict[str, Any]:
    """Mean absolute and largest error over the pairs, in all and, with `measured`, per precision and
    model of the run each predicts."""
    found: dict[str, Any] = {**summarised([abs(p["error"]) for p in pairs]), "pairs": len(pairs)}
    if measured:
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
    source: dict[str, Any],
    calibration_target: Target,
    recorded: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """(c) Each run at the source's default calibration of its family, carried by share of peak:
    its step at every setting (None where the calibration reaches no rate there), and, with the
    error such a carry was measured to have (`recorded`: experiments/validation.yaml), the band of
    the measured step that error allows around the settings' steps."""
    found = {}
    for run_id, entry in measured.items():
        family = entry.run.family
        row = speed["calibration"]["rows"].get(family)
        by_precision = (source.get("calibration") or {}).get(family) or {}
        # the source's default precision for the family: its first listed
        precision = next(iter(speed["precision"]["families"].get(family, [])), None)
        calibration = (by_precision.get(precision) or {}).get(row)
        if calibration is None:
            continue
        carried = rates_from(calibration, entry.target, calibration_target, entry.run.precision, speed)
        if not carried:
            continue
        steps = band(entry, carried, speed)
        found[run_id] = {
            "calibrated_on": f"{calibration_target.name}/{row}",
            "calibration_precision": precision,
            "share_of_peak": calibration["by_setting"][0]["share_of_peak"],
            "step_s": steps,
            "band": carried_band([step for step in steps if step], recorded),
        }
    return found


def carried_band(steps: list[float], recorded: dict[str, Any] | None) -> dict[str, Any] | None:
    """The measured step a carried prediction allows: its settings' steps widened by the largest
    step error a carry across hardware was measured to have (predicted / measured - 1 within ±e, so
    measured within predicted / (1 + e) and predicted / (1 - e))."""
    if not steps or not recorded:
        return None
    error = recorded["largest_abs"]
    return {"error": error, "low_s": widened(min(steps), error)[0], "high_s": widened(max(steps), error)[1]}


def fitted_rates(
    smallest: dict[tuple[str, str], Measured],
    fitted: dict[tuple[str, str], list[float | None]],
    carried: dict[str, dict[str, Any]],
    speed: dict[str, Any],
) -> list[dict[str, Any]]:
    """Per GPU and precision, the rate calibration (a) fits at the central setting and its share of
    that precision's dense peak: what the runs reach, beside the share (c) carries to them (None
    where the source's calibration carries none)."""
    found = []
    for group, calibrating in sorted(smallest.items()):
        rate, peak = fitted[group][0], peak_flops(calibrating.target, calibrating.run.precision, speed)
        source = carried.get(calibrating.run.id)
        found.append(
            {
                "gpu": calibrating.gpu,
                "target": calibrating.target.name,
                "precision": calibrating.run.precision,
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
    """Per GPU and precision, the run calibration (a) predicts worst, and the term of the step beside
    compute whose share differs most from that in the run it was calibrated on: where the model is
    off, and which term carries it."""
    by_id = {row["run"]: row for row in rows if row["status"] == "ok"}
    worst: dict[tuple[str, str], dict[str, Any]] = {}
    for row in by_id.values():
        key, off = (row["target"], row["precision"]), row["smallest"]["error"]
        if off and abs(off) > abs(worst[key]["smallest"]["error"] if key in worst else 0):
            worst[key] = row
    found = []
    for (target, precision), row in sorted(worst.items()):
        calibrating = by_id[row["smallest"]["calibrated_on"]]
        mine, theirs = row["breakdown"], calibrating["breakdown"]
        if not mine or not theirs:
            continue
        # compute's share is what the others leave: the term is the one beside it that moved most
        term = max(step_model.TERMS[1:], key=lambda t: abs(mine[t] / mine["step_s"] - theirs[t] / theirs["step_s"]))
        found.append(
            {
                "target": target,
                "precision": precision,
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
        **{key: getattr(run, key) for key in RUN_FIELDS},
        "measured_step_s": run.step_seconds,
        "citation": run.citation,
    }


def run_line(
    entry: Measured,
    smallest: dict[tuple[str, str], Measured],
    fitted_of: dict[tuple[str, str], list[float | None]],
    pairs_of: dict[str, dict[str, list[dict[str, Any]]]],
    across: dict[str, Any] | None,
    speed: dict[str, Any],
) -> dict[str, Any]:
    """A predicted run: its step under calibration (a) (its group's smallest run, and the rates that
    run fits at every setting) at every setting and by every model of the ablation, its errors under
    (b) and (c), and its step's terms at the central setting. (Its error from runs of its own model,
    which predicted bands take, is real_hardware_errors' over every pair.)"""
    run, calibrating, fitted = entry.run, smallest[entry.group], fitted_of[entry.group]
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
            "calibrated_on": calibrating.run.id,
            "step_s": steps,
            "error": error(steps[0], run.step_seconds) if steps[0] and not calibrates else None,
            "by_model": {name: found[0]["error"] if found else None for name, found in own.items()},
        },
        "untested": untested(entry, calibrates, every),
        "every_run": {"pairs": len(every), **summarised([abs(p["error"]) for p in every])},
        "across_hardware": across
        and {**across, "error": error(across["step_s"][0], run.step_seconds) if across["step_s"][0] else None},
        "breakdown": step_model.breakdown(replayed(entry.program, at), entry.program["entry"], at) if at else None,
    }


def untested(entry: Measured, calibrates: bool, every: list[dict[str, Any]]) -> str | None:
    """Why no calibration of the run's own GPU tests its prediction, in words; None where one does."""
    gpu, precision = entry.group
    if calibrates and not every:
        return (
            f"the only run of {precision} on {gpu}: it calibrates the model there, and no other run of its GPU"
            " and precision tests it (only (c), across hardware, predicts it)"
        )
    if calibrates:
        return (
            f"calibrates (a) for {precision} on {gpu} as its smallest run: its own measured step fixes the rate,"
            " so (a) does not test it; (b) does, from the other runs"
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
    runs: list[MeasuredRun], compiled: dict[str, dict[str, Any]], out: Path, speed: dict[str, Any]
) -> dict[str, Any]:
    """A latency profile of every run's program that compiled and fits, written whole to `out`; per run,
    what its entries were costed at (or why it has none). The runs' timed steps were scheduled by a
    profile recorded on their cluster (PGLE), which is not published: this one is the model's costs of
    each program (produce/predicted/model_profile.py), compute at the rate calibration (a) fits at the
    central setting. One file serves every run: each entry is named by its program's fingerprint."""
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


def profile_guided(
    runs: list[MeasuredRun], profiled: dict[str, dict[str, Any]], speed: dict[str, Any]
) -> dict[str, Any] | None:
    """The same runs, each compiled again with a profile of the model's own costs of its program
    (write_run_profiles), as the runs were scheduled with a profile recorded on the
    cluster: the full model's and the simple model's errors under calibrations (a) and (b), and what
    XLA found of each program in the profile."""
    measured, failed = read_measured(runs, profiled, speed)
    if not measured:
        return None
    pairs_of = {name: by_calibration(measured, speed, free) for name, free in (MODELS[0], MODELS[-1])}
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
    measured, failed = read_measured(runs, compiled, speed)
    if not measured:
        raise DataError("no measured run compiled and fits: nothing to validate the model against")
    full = MODELS[-1][0]
    pairs_of = {name: by_calibration(measured, speed, free) for name, free in MODELS}
    recorded = validation["calibrations"]["across_hardware"].get("recorded_error")
    carried = (
        across_hardware(measured, speed, source, calibration_target, recorded) if source and calibration_target else {}
    )
    smallest = {group: smallest_of(entries) for group, entries in groups(measured).items()}
    # the compute rate each group's smallest run fits at every setting (None where none reaches its step)
    fitted = {
        group: [entry.calibrate(setting, speed) for setting in settings(speed)] for group, entry in smallest.items()
    }
    rows = [
        run_line(measured[run.id], smallest, fitted, pairs_of, carried.get(run.id), speed)
        if run.id in measured
        else {**identity(run), **failed[run.id]}
        for run in runs
    ]
    across_pairs = [
        {"predicted": run_id, "error": error(found["step_s"][0], measured[run_id].run.step_seconds)}
        for run_id, found in carried.items()
        if found["step_s"][0]
    ]
    return {
        "evidence": "validation",
        "status": "ok",
        "message": None,
        "runs": rows,
        "calibrations": {name: dict(validation["calibrations"][name]) for name in CALIBRATIONS},
        "errors": {
            "model": full,
            "simple_model": SIMPLE,
            "by_model": errors_by_model(pairs_of, measured),
            "across_hardware": summary(across_pairs, measured),
        },
        "pairs": {calibration: pairs_of[full][calibration] for calibration in ("smallest", "every_run")},
        "real_hardware_error": real_hardware_errors(pairs_of[full]["every_run"], rows, validation["kinds"]),
        "fitted_rates": fitted_rates(smallest, fitted, carried, speed),
        "where_off": where_off(rows),
        "settings": [list(setting) for setting in settings(speed)],
        "compile": compile_record(validation, compiled),
        "profile_guided": profile_guided(runs, profiled, speed) if profiled else None,
    }
