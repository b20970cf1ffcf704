"""The README's figures of time, generated from what was measured (envs/timings.yaml, written by
`workflow/scripts/benchmark.py --record`), never typed: each with the commit and day it was measured
at, and the machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.data import validate
from offload_repro.core.files import REPO_ROOT, read_yaml

TIMINGS_FILE = "envs/timings.yaml"
TIMES = "measured times"  # the name its markers in the README give the block
# (figure, the command it times, as the README names it), in the README's order
COMMANDS = (
    ("bootstrap", "`envs/bootstrap.sh`"),
    ("main_job", "the main job"),
    ("quick_tier", "`envs/test.sh --quick`"),
    ("ci", "every test as CI runs them"),
)


def load_timings(path: Path = REPO_ROOT / TIMINGS_FILE) -> dict[str, Any]:
    return validate(read_yaml(path), "timings", TIMINGS_FILE)


def duration(seconds: float) -> str:
    """'48 s', '4 min 38 s', '19 min': to the second below ten minutes, to the minute above."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, rest = divmod(seconds, 60)
    return f"{round(seconds / 60)} min" if minutes >= 10 else f"{minutes} min {rest} s"


def timings_block(path: Path = REPO_ROOT / TIMINGS_FILE) -> str:
    """The README's sentence of measured times: each command's time, its commit and day, how it was timed."""
    record = load_timings(path)
    machine, figures = record["machine"], record["figures"]
    parts = []
    for name, command in COMMANDS:
        if name in figures:
            figure = figures[name]
            bare = (
                f"; a bare MaxText run took {duration(figure['bare_maxtext_s'])}" if "bare_maxtext_s" in figure else ""
            )
            when = f"{figure['commit']}, {figure['measured_on']}{bare}"
            parts.append(f"{command} {duration(figure['seconds'])} ({figure['how']}; {when})")
    head = f"Measured on {machine['cores']} cores and {machine['memory_gib']:g} GiB with nothing else running"
    return f"{head} (`{TIMINGS_FILE}`, written by `workflow/scripts/benchmark.py --record`): " + "; ".join(parts) + "."
