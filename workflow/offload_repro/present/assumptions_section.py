"""The page's assumptions section: every setting the source does not state, its alternatives'
compiled memory, each row's predicted step terms under each of its settings, the claims each
alternative changes (as the verdicts record them)."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import Row
from offload_repro.present import charts
from offload_repro.present.chart_specs import inline_spec


def steps_chart(entry: dict[str, Any], default_terms: dict[str, Any], rows: list[Row]) -> dict[str, str] | None:
    """The rows an assumption affects, their predicted step terms under the default and each
    alternative that was predicted; None where fewer than two settings were."""
    settings = {"default": default_terms} | {
        alt["id"]: alt["step_terms"] for alt in entry["alternatives"] if alt.get("step_terms")
    }
    chart = charts.step_terms_by_setting(entry["affects"], settings, {row.id: row for row in rows})
    return inline_spec(f"steps-{entry['id']}", chart) if chart is not None else None


def assumptions_section(
    sensitivity: dict[str, Any] | None, verdicts: dict[str, Any], all_rows: list[Row]
) -> dict[str, Any] | None:
    """Every assumption with its alternatives' compiled memory and predicted steps, the claims each
    changes."""
    if sensitivity is None:
        return None
    changes = verdicts.get("changes_by_alternative", {})
    entries = []
    for entry in sensitivity["assumptions"]:
        entries.append(
            {
                **entry,
                "rows": entry["affects"],
                "steps_chart": steps_chart(entry, sensitivity.get("default_step_terms") or {}, all_rows),
                "alternatives": [
                    {**alt, "changes": changes.get(f"{entry['id']}.{alt['id']}", [])} for alt in entry["alternatives"]
                ],
            }
        )
    robust = [c for c in verdicts["claims"] if c.get("robustness") and c["robustness"]["robust"]]
    dependent = [c for c in verdicts["claims"] if c.get("robustness") and not c["robustness"]["robust"]]
    return {
        "entries": entries,
        "robust": robust,
        "dependent": dependent,
        "default_speed_error": sensitivity.get("default_speed_error"),
    }
