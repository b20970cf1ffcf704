"""What runs added beside the recorded ones (experiments/validation.yaml, recorded_runs) moved: per
recorded run, its calibration (a) (which run calibrates it, and its error) and its errors under (b)
(every other run of its GPU and precision calibrating in turn), each over the recorded runs alone
and over all; only those that moved are listed. (c) depends on no other run: the source's own
calibration carries to each run alone.

A pair (one run calibrating, another predicted) depends on those two runs only, so the values over
the recorded runs are the same pairs, filtered: nothing is replayed twice."""

from __future__ import annotations

from typing import Any

from offload_repro.produce.predicted.leave_one_out import summarised


def among(pairs: list[dict[str, Any]], runs: set[str]) -> list[dict[str, Any]]:
    """The pairs whose two runs are both of `runs`."""
    return [pair for pair in pairs if pair["calibrated_on"] in runs and pair["predicted"] in runs]


def anchored(pairs: list[dict[str, Any]], run_id: str) -> dict[str, Any] | None:
    """The run's calibration (a): the run that calibrates it and its error; None where (a) does not
    predict it (it is its group's anchor, or its group has none)."""
    found = next((pair for pair in pairs if pair["predicted"] == run_id), None)
    return found and {"calibrated_on": found["calibrated_on"], "error": found["error"]}


def every_other(pairs: list[dict[str, Any]], run_id: str) -> dict[str, Any]:
    """The run's errors under (b): how many runs predict it, their mean and largest absolute error."""
    mine = [abs(pair["error"]) for pair in pairs if pair["predicted"] == run_id]
    return {"pairs": len(mine), **summarised(mine)}


def moved_runs(pairs: dict[str, list[dict[str, Any]]], recorded: set[str]) -> list[dict[str, Any]]:
    """Each recorded run whose calibration (a) or errors under (b) differ over all runs from those over
    the recorded runs alone: the calibration, and the two values."""
    kept = {calibration: among(found, recorded) for calibration, found in pairs.items()}
    found = []
    for run_id in sorted(recorded):
        for calibration, of in (("smallest", anchored), ("every_run", every_other)):
            before, after = of(kept[calibration], run_id), of(pairs[calibration], run_id)
            if before != after:
                found.append({"run": run_id, "calibration": calibration, "before": before, "after": after})
    return found


CALIBRATION_WORDS = {"smallest": "(a) its group's anchor", "every_run": "(b) every other run of its GPU and precision"}


def share(value: float | None) -> str:
    return "none" if value is None else f"{value:.1%}"


def _value(calibration: str, found: dict[str, Any] | None) -> str:
    """One side of a moved value, in words."""
    if calibration == "smallest":
        return "not predicted" if found is None else f"{found['calibrated_on']}, {found['error']:+.1%}"
    assert found is not None
    return f"{share(found['mean_abs'])} mean, {share(found['largest_abs'])} largest over {found['pairs']}"


def since_record_lines(since: dict[str, Any], errors: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """What the runs added beside the recorded ones moved, in words: the console's lines and the page's.
    `errors`: the full model's errors under (a) and (b) over all runs, set beside those over the
    recorded runs alone."""
    recorded = len(since["recorded_runs"])
    if not since["added"]:
        return [f"no run added beside the {recorded} the recorded errors are over (experiments/validation.yaml)"]
    moved = since["moved"]
    runs_moved = sorted({entry["run"] for entry in moved})
    kept = [c for c in CALIBRATION_WORDS if not any(entry["calibration"] == c for entry in moved)]
    lines = [
        f"{len(since['added'])} {'run' if len(since['added']) == 1 else 'runs'} added beside the {recorded} the"
        " recorded errors are over:"
        f" {', '.join(since['added'])}; {len(runs_moved)} of the {recorded} recorded runs moved"
        + (f"; none under {' or '.join(CALIBRATION_WORDS[c] for c in kept)}" if kept else "")
    ]
    for calibration, words in CALIBRATION_WORDS.items():
        before, after = since["errors"][calibration], (errors or {}).get(calibration)
        if after and after != before:
            lines.append(
                f"{words.split(' ')[0]} over the recorded runs: {_value('every_run', before)} predictions;"
                f" with those added: {_value('every_run', after)}"
            )
    lines += [
        f"{entry['run']}, {CALIBRATION_WORDS[entry['calibration']]}: {_value(entry['calibration'], entry['before'])}"
        f" -> {_value(entry['calibration'], entry['after'])}"
        for entry in moved
    ]
    lines += [f"not recorded, so no verdict takes it yet: {line}" for line in since.get("to_record", [])]
    return lines
