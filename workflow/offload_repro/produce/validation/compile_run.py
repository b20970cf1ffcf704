"""A published run compiled here as it ran: its program for its GPU at its node count, through the
one cache of compiled programs, and its compiled evidence with every way the compile differs from
what ran (flags this XLA no longer knows, settings this build substitutes, compile-only flags)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from offload_repro.core.measured_elsewhere import MeasuredRun, compiled_as, load_validation, target_for
from offload_repro.core.results import write_result
from offload_repro.produce.compiled.compiled_row import compiled_evidence
from offload_repro.produce.validation.xla_flags import unknown_flags


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
    recorded one (produce/validation/run_profiles.py)."""
    validation = load_validation()
    target = target_for(run)
    unknown = unknown_flags(run.xla_flags, python)
    compiled = compiled_as(run, target, validation, unknown)
    # the one path every compile takes: the program from the cache or compiled, and its result
    result = compiled_evidence(compiled.row, target, work_dir, programs, python, latency_profile=latency_profile)
    result["measured_elsewhere"] = {
        "source": run.source,
        "source_file": run.source_file,
        "precision": run.precision,
        "gpus": run.gpus,
        "nodes": run.nodes,
        "step_seconds": run.step_seconds,
        "citation": run.citation,
        "container": run.container,
        "dropped_unknown_flags": unknown,
        "not_compiled_flags": compiled.not_compiled_flags,
        "not_compiled": run.not_compiled,
        "substitutions": compiled.substitutions,
        "compile_only_flags": compiled.added_flags,
        "one_slice": validation["compile"]["one_slice"],
    }
    return write_result(out_json, "compile", result)
