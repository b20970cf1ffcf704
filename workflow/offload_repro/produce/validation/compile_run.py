"""A published run compiled here as it ran: its program for its GPU at its node count, through the
one cache of compiled programs, and its compiled evidence with every way the compile differs from
what ran (flags this XLA no longer knows, settings this build substitutes, compile-only flags).

Which flags this XLA knows is asked of XLA itself, which names every unknown flag of XLA_FLAGS at
once and stops ("Unknown flags in XLA_FLAGS: ..."): a published run's flag that a later XLA removed
is dropped from its compile and recorded, never silently."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from offload_repro.core.measured_elsewhere import MeasuredRun, compiled_as, load_validation, target_for
from offload_repro.core.process import package_environment
from offload_repro.core.results import write_result
from offload_repro.produce.compiled.compiled_row import compiled_evidence

UNKNOWN = re.compile(r"Unknown flags? in XLA_FLAGS: (.*)")
# XLA parses XLA_FLAGS when its first client starts; the CPU client parses the GPU flags too.
PROBE = "import jax; jax.devices()"


def unknown_flags(flags: list[str], python: str = sys.executable) -> list[str]:
    """The flags of `flags` this XLA does not know (a start of XLA in a process of its own, under a second)."""
    if not flags:
        return []
    env = package_environment({"XLA_FLAGS": " ".join(flags), "JAX_PLATFORMS": "cpu"})
    done = subprocess.run([python, "-c", PROBE], env=env, capture_output=True, text=True)
    found = UNKNOWN.search(done.stdout + done.stderr)  # the unknown flags, as written in XLA_FLAGS
    unknown = found.group(1).split() if found else []
    if done.returncode != 0 and not unknown:
        raise RuntimeError(f"XLA could not start to check its flags: {(done.stdout + done.stderr)[-2000:]}")
    return unknown


def compile_measured(
    run: MeasuredRun,
    out_json: Path,
    work_dir: Path,
    programs: Path | None,
    python: str = sys.executable,
    latency_profile: Path | None = None,
) -> dict[str, Any]:
    """Compile the run (or take its program from the cache `programs`) and write its result;
    `latency_profile`: a profile of the model's costs its scheduler takes in place of the run's own
    recorded one (against_measured.write_run_profiles)."""
    validation = load_validation()
    target = target_for(run)
    unknown = unknown_flags(run.xla_flags, python)
    compiled = compiled_as(run, target, validation, unknown)
    # the one path every compile takes: the program from the cache or compiled, and its result
    result = compiled_evidence(compiled.row, target, work_dir, programs, python, latency_profile=latency_profile)
    run_fields = ("source", "source_file", "precision", "gpus", "nodes", "step_seconds", "citation", "container")
    result["measured_elsewhere"] = {
        **{key: getattr(run, key) for key in run_fields},
        "dropped_unknown_flags": unknown,
        "not_compiled_flags": compiled.not_compiled_flags,
        "not_compiled": run.not_compiled,
        "substitutions": compiled.substitutions,
        "compile_only_flags": compiled.added_flags,
        "one_slice": validation["compile"]["one_slice"],
    }
    return write_result(out_json, "compile", result)
