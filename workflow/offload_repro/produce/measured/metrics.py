"""MaxText's metrics file (one JSON object per step) -> the numbers a run reports."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import median
from typing import Any

STEP_TIME = "perf/step_time_seconds"
TFLOPS = "perf/per_device_tflops_per_sec"
TOKENS = "perf/per_device_tokens_per_sec"
LOSS = "learning/loss"


def read_steps(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.exists():
        return []
    steps = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(steps, key=lambda step: step["step"])


def summarize(steps: list[dict[str, Any]], warmup_steps: int) -> dict[str, Any]:
    """Medians over the steps after warm-up (the first steps include compilation)."""
    timed = steps[warmup_steps:]
    summary: dict[str, Any] = {"steps_completed": len(steps), "steps_timed": len(timed)}
    if timed:
        summary |= {
            "step_time_s": median(s[STEP_TIME] for s in timed),
            "tflops_per_device": median(s[TFLOPS] for s in timed),
            "tokens_per_s_per_device": median(s[TOKENS] for s in timed),
            "model_tflops_per_step_per_device": timed[0].get("perf/per_device_tflops"),
        }
    return summary | {"losses": [s[LOSS] for s in steps]}
