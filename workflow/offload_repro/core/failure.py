"""Why a process failed, in its own last fatal words, read from what it left behind.

The words are its own record of the exception it caught, where it lived to write one; else,
whichever it wrote last, XLA's or absl's fatal log line (`F<date> <time> <thread> <file:line>]
...`, with the error lines its thread logged just before it: a flag XLA cannot read is said on an
`E` line, then the parser's `Check failed`) or the exception that ends a Python traceback (its
type and message); else an out-of-memory message or the last line that names an error; where it
said nothing, the signal that ended it. They are kept as written, cut to CAUSE_CHARS, beside the
exit status, the signal and the log they came from (a result's `failure` field), so that a reader
sees why without opening the log.
"""

from __future__ import annotations

import re
import signal
from dataclasses import asdict, dataclass
from typing import Any

CAUSE_CHARS = 400
CUT = " […]"
# absl's and glog's line: severity, MMDD, time, thread, file:line] words
LOG_LINE = re.compile(r"^([DIWEF])\d{4} \d\d:\d\d:\d\d\.\d+\s+(\d+)\s+([^\s\]]+)\] ?(.*)$")
TRACEBACK = "Traceback (most recent call last):"
OUT_OF_MEMORY = re.compile(r"RESOURCE_EXHAUSTED|out of memory|CUDA_ERROR_OUT_OF_MEMORY", re.IGNORECASE)
# XLA:TPU's compile-time refusal, with the two sizes it names, in GiB (it gives v5e's 15.75G):
# "RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM, the total memory required
# for HLO temporaries (17.62G) exceeds available HBM (15.75G)."
HBM_OOM = re.compile(
    r"(?:RESOURCE_EXHAUSTED|CompileTimeHbmOom)[^\n]*?\(([\d.]+)G\) exceeds available HBM \(([\d.]+)G\)"
)
ERROR_LINE = re.compile(r"^\w*(Error|Exception)\b.*|.*Error: .*|^srun: error: .*")
# srun's account of a task that failed: "srun: error: <host>: task(s) <ids>: <how it ended>"
SRUN_TASK = re.compile(r"srun: error: (\S+): tasks? ([\d,\-]+): (.+)")
# srun names a task's signal by its description (strsignal): "Killed" for SIGKILL
DESCRIBED_SIGNALS = {signal.strsignal(number): number for number in signal.Signals}


@dataclass(frozen=True)
class Failure:
    """One failed process: its cause, where in its output the cause was found, how it ended."""

    cause: str
    found_in: str  # e.g. "fatal log line (parse_flags_from_env.cc:234)", "Python traceback", "signal"
    exit_status: int | None  # None: it never ran as a process of its own, or its status is unknown
    signal: str | None  # the signal that ended it (SIGKILL), if one did
    log: str | None  # the log the cause was read from, relative to the checkout where it lies in it

    def record(self) -> dict[str, Any]:
        return asdict(self)


def cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= CAUSE_CHARS else text[: CAUSE_CHARS - len(CUT)].rstrip() + CUT


def signal_name(returncode: int | None) -> str | None:
    """SIGKILL for -9 (how subprocess reports a process a signal ended)."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _fatal_line(lines: list[str]) -> tuple[int, str, str] | None:
    """(index, words, found_in) of the last fatal log line, its thread's error lines before it first."""
    for index in range(len(lines) - 1, -1, -1):
        fatal = LOG_LINE.match(lines[index])
        if fatal is None or fatal.group(1) != "F":
            continue
        words = [fatal.group(4)]
        for before in reversed(lines[:index]):
            error = LOG_LINE.match(before)
            if error is None or error.group(1) != "E" or error.group(2) != fatal.group(2):
                break
            words.insert(0, error.group(4))
        return index, "\n".join(words), f"fatal log line ({fatal.group(3)})"
    return None


def _traceback_end(lines: list[str]) -> tuple[int, str, str] | None:
    """(index, words, found_in) of the exception that ends the last Python traceback: its first
    line after the frames and the lines that continue its message (up to a blank line, a log line,
    or the rule of dashes JAX prints before its note on filtered frames)."""
    starts = [index for index, line in enumerate(lines) if line.strip() == TRACEBACK]
    if not starts:
        return None
    index = starts[-1] + 1
    while index < len(lines) and lines[index][:1] in (" ", "\t"):  # the frames
        index += 1
    words: list[str] = []
    for line in lines[index:]:
        if not line.strip() or set(line.strip()) == {"-"} or LOG_LINE.match(line) or line.strip() == TRACEBACK:
            break
        words.append(line.rstrip())
    if not words:
        return None
    return index + len(words) - 1, "\n".join(words), "Python traceback"


def last_words(log_text: str) -> tuple[str, str] | None:
    """(cause, found_in): the fatal log line or the traceback's exception, whichever came last."""
    lines = log_text.splitlines()
    found = [end for end in (_fatal_line(lines), _traceback_end(lines)) if end is not None]
    if not found:
        return None
    _, words, where = max(found)
    return cut(words), where


def last_mention(log_text: str) -> tuple[str, str] | None:
    """(cause, found_in): the last out-of-memory message, else the last line that names an error."""
    lines = [line.strip() for line in log_text.splitlines()]
    for kind, pattern in (("out-of-memory message", OUT_OF_MEMORY), ("error line", ERROR_LINE)):
        matching = [line for line in lines if pattern.search(line)]
        if matching:
            return cut(matching[-1]), kind
    return None


def failure_of(
    returncode: int | None,
    log_text: str,
    log: str | None,
    exception: dict[str, Any] | None = None,
) -> Failure:
    """The failure of a process that exited with `returncode` (below zero: that signal ended it),
    from the log it wrote and, where it caught its own exception, its record of it ({type, message})."""
    if exception is not None:  # it caught its own exception and lived to record it: that ended it
        words = cut(f"{exception['type']}: {exception['message']}"), "exception record"
    else:
        words = last_words(log_text) or last_mention(log_text)
    ended_by = signal_name(returncode)
    if words is None and ended_by:
        words = f"killed by {ended_by}", "signal"
    elif words is None:
        status = f"exited with status {returncode}; " if returncode is not None else ""
        words = f"{status}its log holds no error", "exit status"
    return Failure(*words, exit_status=returncode, signal=ended_by, log=log)


def srun_endings(srun_log: str) -> dict[int, tuple[str, int | None]]:
    """{task: (host, exit status)} of every task srun says failed, in the order it said so; the
    status of a task a signal ended is below zero, as subprocess gives it."""
    endings: dict[int, tuple[str, int | None]] = {}
    for line in srun_log.splitlines():
        if match := SRUN_TASK.search(line):
            host, ids, how = match.groups()
            exited = re.fullmatch(r"Exited with exit code (\d+)", how.strip())
            named = DESCRIBED_SIGNALS.get(how.strip())
            status = int(exited.group(1)) if exited else -named.value if named else None
            for part in ids.split(","):
                first, _, last = part.partition("-")
                for task in range(int(first), int(last or first) + 1):
                    endings.setdefault(task, (host, status))
    return endings


def hbm_oom(message: str) -> dict[str, float] | None:
    """The required and available GiB XLA:TPU named when it refused a program, or None."""
    found = HBM_OOM.search(message)
    return {"required_gib": float(found.group(1)), "available_gib": float(found.group(2))} if found else None
