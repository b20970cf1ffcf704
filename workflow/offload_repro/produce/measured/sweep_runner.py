"""A sweep's points of one model family, trained one after another in this one process: MaxText's
import and the runtime's start are paid once, each point's program compiles once (its later repeats
find it in JAX's compilation cache).

    python -m offload_repro.produce.measured.sweep_runner TARGET FAMILY OUT_DIR [--deadline-s S] [--repeats N]

reads experiments/sweeps/TARGET.yaml. After each repeat, the point's record so far is written to
OUT_DIR/points/<point>.json (status `partial` until its last repeat), so whatever stops the process
keeps every repeat it finished; a point already recorded whole is skipped, a partial one goes on
from its next repeat. A repeat starts only when the time it is expected to take is left before the
deadline (the longest of its kind seen in this process, or a first guess): otherwise the process
says "stopped after N s: call again to continue" and ends. A repeat that runs out of memory (at
compile time on a TPU) ends its point, recorded as `oom` with the runtime's words. The first
repeat's scheduled HLO is kept as OUT_DIR/programs/<point>.hlo.gz (what the step-time model replays
without compiling again); each repeat's output goes to OUT_DIR/work/<point>/repeat-<n>/train.log.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from offload_repro.core import failure, maxtext_args, provenance
from offload_repro.core.data import Target, load_rows, load_target
from offload_repro.core.files import checkout_relative, read_json, write_gzip_text
from offload_repro.core.memory_analysis import memory_analysis_dict
from offload_repro.core.process import fresh_work_dir
from offload_repro.core.results import write_result
from offload_repro.core.sweep import Point, Sweep, load_sweep, process_environment, settings, sweep_file
from offload_repro.produce.measured import launch, metrics, repeats
from offload_repro.produce.measured.runner import classify

TABLES = ("experiments/rows/llama3.1-405b.yaml", "experiments/rows/deepseek-v3-671b.yaml")
# How long a repeat is guessed to take before this process has timed one of its kind: a first repeat
# compiles (on the chip, 2026-12-07: 40 to 60 s for the rows' programs, import aside), a later one finds
# its program cached (4 to 10 s, and its steps).
FIRST_GUESS_S, LATER_GUESS_S = 60.0, 15.0
STOPPED = "stopped after {seconds:.0f} s: call again to continue"

# A trainer trains once: (MaxText arguments, the log to write, whether to return the scheduled HLO)
# -> {exception, compiled_memory, hlo_text, train_seconds, runtime memory at start and end, ...}
Trainer = Callable[[list[str], Path, bool], dict[str, Any]]


@contextlib.contextmanager
def output_to(log_file: Path) -> Iterator[None]:
    """This process's stdout and stderr (Python's and the runtime's alike) into `log_file` for a while."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_file, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


class MaxTextTrainer:
    """MaxText's own trainer (`train.main`), unchanged, called once per repeat in this process; around
    it, what only this process sees: the train step's compiled memory analysis and its scheduled HLO
    (from the executable MaxText compiles ahead of its loop) and the device's memory counters."""

    def __init__(self) -> None:
        import jax
        from maxtext.trainers.pre_train import train
        from maxtext.utils import max_utils

        self.train, self.captured = train, {}
        original_stats, original_compile = max_utils.print_compiled_memory_stats, jax.stages.Lowered.compile

        def keep_compiled(lowered: Any, *args: Any, **kwargs: Any) -> Any:
            self.captured["last"] = original_compile(lowered, *args, **kwargs)
            return self.captured["last"]

        def keep_stats(compiled_stats: Any, prefix: str = "") -> None:
            if prefix == "train" and compiled_stats is not None:  # the train step: MaxText prints it once
                self.captured["memory"] = memory_analysis_dict(compiled_stats)
                self.captured["train"] = self.captured.get("last")
            original_stats(compiled_stats, prefix=prefix)

        jax.stages.Lowered.compile = keep_compiled
        max_utils.print_compiled_memory_stats = keep_stats
        self.started = False

    def __call__(self, argv: list[str], log_file: Path, keep_hlo: bool) -> dict[str, Any]:
        self.captured.clear()
        record: dict[str, Any] = {"exception": None, "live_arrays_at_start": None, "bytes_in_use_at_start": None}
        if self.started:  # before the first, no backend has started
            record |= launch.left_behind()
        record["runtime_memory_at_start"] = launch.device_memory_stats() if self.started else None
        self.started, started = True, time.monotonic()
        with output_to(log_file):
            try:
                self.train.main(["train", launch.resolve_config(argv[0]), *argv[1:]])
            except SystemExit as done:  # MaxText's own exit: a failure only with a nonzero code
                if done.code not in (None, 0):
                    record["exception"] = {"type": "SystemExit", "message": f"exited with {done.code}"}
            except Exception as err:  # recorded, classified as out of memory or error by the caller
                record["exception"] = {"type": type(err).__name__, "message": str(err)[-4000:]}
                traceback.print_exc()
        compiled = self.captured.pop("train", None)
        record |= {
            "train_seconds": round(time.monotonic() - started, 3),
            "compiled_memory": self.captured.get("memory"),
            "hlo_text": compiled.as_text() if keep_hlo and compiled is not None else None,
            "runtime_memory": launch.device_memory_stats(),
        }
        self.captured.clear()
        del compiled
        gc.collect()
        return record


def point_arguments(point: Point, target: Target, sweep: Sweep, repeat_dir: Path) -> list[str]:
    overrides = settings(point, target, sweep.steps) | {
        "base_output_directory": str(repeat_dir / "output"),
        "run_name": point.id,
        "metrics_file": str(repeat_dir / "metrics.jsonl"),
    }
    return ["maxtext:configs/base.yml", *maxtext_args.as_arguments(overrides)]


def measured_peak(repeat: dict[str, Any]) -> dict[str, Any] | None:
    """The device memory a repeat's training reached, where the runtime counts it: on a TPU, the
    weights and optimizer state (peak_bytes_in_use) and the step's temporaries (peak_bytes_reserved).
    The counters never fall in a process, so `own` says whether this repeat raised them; where it did
    not, the bytes are what an earlier point reached, and this one's peak is at most that."""
    end, start = repeat.get("runtime_memory"), repeat.get("runtime_memory_at_start")
    if not end or "peak_bytes_in_use" not in end:
        return None

    def total(stats: dict[str, int]) -> int:
        return stats.get("peak_bytes_in_use", 0) + stats.get("peak_bytes_reserved", 0)

    return {"bytes": total(end), "own": start is None or total(end) > total(start)}


def repeat_result(trained: dict[str, Any], repeat_dir: Path, log_file: Path, sweep: Sweep) -> dict[str, Any]:
    """How one repeat ended and what it measured, from its trainer's record and MaxText's metrics file."""
    steps = metrics.read_steps(repeat_dir / "metrics.jsonl")
    log_text = log_file.read_text(encoding="utf-8", errors="replace") if log_file.exists() else ""
    exception = trained.get("exception")
    status = classify(0 if exception is None else 1, exception, log_text[-20000:], len(steps), sweep.steps)
    cause = None
    if status != "ok":
        cause = failure.failure_of(None, log_text, checkout_relative(log_file), exception).record()
        if cause["found_in"] == "exit status":
            cause["cause"] = f"training stopped after {len(steps)} of {sweep.steps} steps"
    kept = ("train_seconds", "live_arrays_at_start", "bytes_in_use_at_start", "runtime_memory_at_start")
    return {
        "status": status,
        "failure": cause,
        **metrics.summarize(steps, sweep.warmup_steps),
        **{key: trained.get(key) for key in (*kept, "runtime_memory", "compiled_memory")},
        "hbm_oom": failure.hbm_oom(log_text + str(exception or "")) if status == "oom" else None,
        "train_log": checkout_relative(log_file),
    }


def point_record(point: Point, sweep: Sweep, target: Target, done: list[dict[str, Any]], env: dict[str, str]) -> dict:
    """The point's record from the repeats done so far: `partial` until the last, or how the first
    that failed ended."""
    last, first = done[-1], done[0]
    status = last["status"] if last["status"] != "ok" or len(done) >= sweep.repeats else "partial"
    ok = [repeat for repeat in done if repeat["status"] == "ok"]
    return {
        "point": point.id,
        "regime": point.regime,
        "row": point.row.id,
        "family": point.family,
        "target": target.name,
        "status": status,
        "message": (last["failure"] or {}).get("cause"),
        "failure": last["failure"],
        "hbm_oom": last["hbm_oom"],
        "overrides": point.overrides,
        "placement": point.row.placement,
        "steps": sweep.steps,
        "warmup_steps": sweep.warmup_steps,
        "repeats_planned": sweep.repeats,
        **({k: first[k] for k in ("steps_completed", "steps_timed", "losses")}),
        "model_tflops_per_step_per_device": first.get("model_tflops_per_step_per_device"),
        **(repeats.aggregate(ok) if ok else {"repeats": [], "spread": {}}),
        "repeat_runs": done,  # each as it ended, what a later call resumes from
        "compiled_memory": first.get("compiled_memory"),
        "measured_peak": measured_peak(first),
        "xla_flags": env["XLA_FLAGS"],
        "maxtext_arguments": first["arguments"],
        "hlo": first.get("hlo"),
    }


class Deadline:
    """When this process must have stopped, and how long each kind of repeat has taken here so far."""

    def __init__(self, seconds: float) -> None:
        self.began = self.clock()
        self.ends = self.began + seconds
        self.longest = {"first": FIRST_GUESS_S, "later": LATER_GUESS_S}
        self.timed: set[str] = set()

    @staticmethod
    def clock() -> float:
        return time.monotonic()

    def allows(self, kind: str) -> bool:
        return self.clock() + self.longest[kind] <= self.ends

    def took(self, kind: str, seconds: float) -> None:
        # the first timing replaces the guess; later ones only raise it
        self.longest[kind] = seconds if kind not in self.timed else max(self.longest[kind], seconds)
        self.timed.add(kind)

    def elapsed(self) -> float:
        return self.clock() - self.began


def say(message: str) -> None:
    print(f"sweep: {message}", flush=True)


def run_points(
    sweep: Sweep, target: Target, points: list[Point], out: Path, trainer: Trainer, deadline: Deadline, env: dict
) -> dict[str, Any]:
    """Train each point not yet recorded whole, up to the deadline; returns what this call did."""
    shared = {"versions": provenance.versions(), "python": sys.version.split()[0]}
    did: dict[str, Any] = {"recorded": [], "skipped": [], "stopped": False}
    for point in points:
        hlo = out / "programs" / f"{point.id}.hlo.gz"
        path = out / "points" / f"{point.id}.json"
        earlier = read_json(path) if path.exists() else None
        if earlier is not None and earlier["status"] != "partial":
            did["skipped"].append(point.id)
            say(f"{point.id}: already recorded ({earlier['status']})")
            continue
        done = list(earlier["repeat_runs"]) if earlier else []
        for number in range(len(done) + 1, sweep.repeats + 1):
            # the point's first repeat in this process compiles its program (a resumed point's too: the
            # cache of an earlier call may be on another machine)
            kind = "later" if number > len(earlier["repeat_runs"] if earlier else []) + 1 else "first"
            if not deadline.allows(kind):
                did["stopped"] = True
                say(STOPPED.format(seconds=deadline.elapsed()))
                return did
            repeat_dir = fresh_work_dir(out / "work" / point.id / f"repeat-{number}")
            log_file = repeat_dir / "train.log"
            arguments = point_arguments(point, target, sweep, repeat_dir)
            started = deadline.clock()
            trained = trainer(arguments, log_file, not hlo.exists())
            took = deadline.clock() - started
            deadline.took(kind, took)
            repeat = repeat_result(trained, repeat_dir, log_file, sweep) | {
                "repeat": number,
                "wall_time_s": round(took, 2),
                "arguments": arguments,
                "hlo": None,
            }
            if trained.get("hlo_text"):
                write_gzip_text(hlo, trained["hlo_text"])
                repeat["hlo"] = f"programs/{hlo.name}"
            done.append(repeat)
            record = point_record(point, sweep, target, done, env) | shared | {"provenance": provenance.stamp()}
            write_result(path, "sweep-point", record)
            say(f"{point.id}: repeat {number} of {sweep.repeats}: {repeat['status']} in {took:.0f} s")
            if repeat["status"] != "ok":
                break
        did["recorded"].append(point.id)
    return did


def in_absl_app(body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`body` under absl's app.run, as MaxText's own __main__ runs its trainer (flags parsed, logging
    set up); app.run always exits, what `body` returned is kept."""
    from absl import app

    found: dict[str, Any] = {}

    def run(_argv: list[str]) -> None:
        found["did"] = body()

    with contextlib.suppress(SystemExit):
        app.run(run, argv=["sweep"])
    return found["did"]


def main(argv: list[str] | None = None, trainer: Trainer | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target")
    parser.add_argument("family")
    parser.add_argument("out", type=Path)
    parser.add_argument("--deadline-s", type=float, default=540.0)
    parser.add_argument("--repeats", type=int, default=None, help="in place of the sweep file's repeats")
    parser.add_argument("--sweep", type=Path, default=None, help="another sweep file (the tests' and dry runs')")
    args = parser.parse_args(argv)
    deadline = Deadline(args.deadline_s)
    target = load_target(args.target)
    sweep = load_sweep(args.sweep or sweep_file(args.target), load_rows(list(TABLES)), target)
    if args.repeats:
        sweep = Sweep(sweep.source, sweep.target, sweep.steps, sweep.warmup_steps, args.repeats, sweep.points)
    points = sweep.family(args.family)
    if not points:
        sys.exit(f"sweep: {sweep.source} has no point of family '{args.family}'")
    env = process_environment(points, target)
    os.environ.update(env)  # before JAX starts: XLA reads its flags once
    if trainer is None:
        from offload_repro.core.grouped_matmul import install_from

        install_from(os.environ)  # the rows' grouped matmul, before MaxText builds a model
    say(f"{len(points)} points of {args.family} on {target.name}, at most {args.deadline_s:.0f} s")
    if trainer is not None:
        did = run_points(sweep, target, points, args.out.resolve(), trainer, deadline, env)
    else:
        did = in_absl_app(
            lambda: run_points(sweep, target, points, args.out.resolve(), MaxTextTrainer(), deadline, env)
        )
    left = [p.id for p in points if p.id not in did["recorded"] + did["skipped"]]
    say(f"{len(did['recorded'])} recorded in this call, {len(did['skipped'])} earlier, {len(left)} left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
