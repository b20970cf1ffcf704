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
    """The README's sentence of measured times: each command's time and how it was timed, with the
    commit, the day and the bare MaxText run beside it, said once where every figure shares them."""
    record = load_timings(path)
    machine, figures = record["machine"], record["figures"]
    measured = [(command, figures[name]) for name, command in COMMANDS if name in figures]
    shared = {when(figure) for _, figure in measured}
    parts = [
        f"{command} {duration(figure['seconds'])} ({figure['how']}"
        + ("" if len(shared) == 1 else f"; {when(figure)}")
        + ")"
        for command, figure in measured
    ]
    head = f"Measured on {machine['cores']} cores and {machine['memory_gib']:g} GiB with nothing else running"
    head += f", {shared.pop()}" if len(shared) == 1 else ""
    return f"{head} (`{TIMINGS_FILE}`, written by `workflow/scripts/benchmark.py --record`): " + "; ".join(parts) + "."


def when(figure: dict[str, Any]) -> str:
    """'at 5470db6 on 2026-12-07, a bare MaxText run taking 11.3 s': what a figure was measured at."""
    bare = f", a bare MaxText run taking {figure['bare_maxtext_s']:g} s" if "bare_maxtext_s" in figure else ""
    return f"at {figure['commit']} on {figure['measured_on']}{bare}"
