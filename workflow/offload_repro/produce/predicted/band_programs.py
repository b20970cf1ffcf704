"""The band over every program that may have run: the prediction of each row's default program,
with the predictions of the alternative programs experiments/speed.yaml names (`programs`)
appended setting by setting.

Each alternative is predicted from its own programs and calibrated on them (rule predict_variant),
so no rate fitted on one program predicts another compiled under different memory pressure. Its
settings follow the default's, each marked with its program (`settings.program`). A row an
alternative cannot predict (its program did not compile, or does not fit) has no value at that
alternative's settings: the band stays open toward it, since what the row would have done there
is unknown. The leave-one-out error, the calibration and the step's terms stay the default's.
"""

from __future__ import annotations

from typing import Any

SETTING_KEYS = ("link_level", "network_end", "overlap")
DEFAULT = "default"


def appended(values: list[float | None] | None, more: list[float | None] | None, count: int) -> list[float | None]:
    return list(values or [None] * count) + list(more or [None] * count)


def with_programs(prediction: dict[str, Any], alternatives: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`prediction` with each alternative's predictions appended (`alternatives`: name -> its
    prediction, in order), its settings marked by program; the alternatives it covers in `band_programs`."""
    if not alternatives:
        return prediction
    ours = prediction["settings"]
    count = len(ours["link_level"])
    settings: dict[str, Any] = {key: list(ours.get(key) or []) for key in SETTING_KEYS}
    settings["program"] = [DEFAULT] * count
    for name, alternative in alternatives.items():
        theirs = alternative["settings"]
        more = len(theirs["link_level"])
        for key in SETTING_KEYS:
            settings[key] += list(theirs.get(key) or [])
        settings["program"] += [name] * more
        predicted = {row["row"]: row for row in alternative["rows"] if row["status"] == "ok"}
        for row in prediction["rows"]:
            if row["status"] != "ok":
                continue
            other = predicted.get(row["row"]) or {}
            if row["tflops_per_device"] is not None:  # None: no calibration reaches the row at all
                row["tflops_per_device"] = appended(row["tflops_per_device"], other.get("tflops_per_device"), more)
            row["by_calibration"] = {
                calibration: appended(values, (other.get("by_calibration") or {}).get(calibration), more)
                for calibration, values in row["by_calibration"].items()
            }
        count += more
    settings["order"] = ours["order"] + "; the default programs' settings, then each alternative program's (program)"
    return prediction | {
        "settings": settings,
        "band_programs": [
            {
                "program": name,
                "rows_predicted": sum(1 for row in alt["rows"] if row["status"] == "ok"),
                # each row's step and its terms at the central setting, under that program
                "step_terms": {
                    row["row"]: row["breakdown"]
                    for row in alt["rows"]
                    if row["status"] == "ok" and row.get("breakdown")
                },
            }
            for name, alt in alternatives.items()
        ],
    }
