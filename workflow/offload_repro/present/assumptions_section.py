"""The page's assumptions section: every setting the source does not state, its alternatives'
compiled memory and leave-one-out error, the claims each alternative changes (as the verdicts
record them)."""

from __future__ import annotations

from typing import Any


def assumptions_section(sensitivity: dict[str, Any] | None, verdicts: dict[str, Any]) -> dict[str, Any] | None:
    """Every assumption with its alternatives' compiled memory and leave-one-out error, the claims
    each changes."""
    if sensitivity is None:
        return None
    changes = verdicts.get("changes_by_alternative", {})
    entries = [
        entry
        | {
            "rows": entry["affects"],
            "alternatives": [
                alt | {"changes": changes.get(f"{entry['id']}.{alt['id']}", [])} for alt in entry["alternatives"]
            ],
        }
        for entry in sensitivity["assumptions"]
    ]
    judged = [c for c in verdicts["claims"] if c.get("robustness")]
    return {
        "entries": entries,
        "robust": [c for c in judged if c["robustness"]["robust"]],
        "dependent": [c for c in judged if not c["robustness"]["robust"]],
        "default_speed_error": sensitivity.get("default_speed_error"),
    }
