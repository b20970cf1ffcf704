"""The page's assumptions section: every setting the source does not state, its alternatives'
compiled memory, the claims each alternative changes (as the verdicts record them), and the best
fit."""

from __future__ import annotations

from typing import Any


def assumptions_section(sensitivity: dict[str, Any] | None, verdicts: dict[str, Any]) -> dict[str, Any] | None:
    """Every assumption with its alternatives' compiled memory, the claims each changes, the best fit."""
    if sensitivity is None:
        return None
    changes = verdicts.get("changes_by_alternative", {})
    entries = []
    for entry in sensitivity["assumptions"]:
        rows = entry["affects"]
        entries.append(
            {
                **entry,
                "rows": rows,
                "alternatives": [
                    {**alt, "changes": changes.get(f"{entry['id']}.{alt['id']}", [])} for alt in entry["alternatives"]
                ],
            }
        )
    robust = [c for c in verdicts["claims"] if c.get("robustness") and c["robustness"]["robust"]]
    dependent = [c for c in verdicts["claims"] if c.get("robustness") and not c["robustness"]["robust"]]
    return {"entries": entries, "fit": sensitivity["fit"], "robust": robust, "dependent": dependent}
