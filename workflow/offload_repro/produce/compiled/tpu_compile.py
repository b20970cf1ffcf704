"""Compile MaxText's real train step for a TPU topology, without running it, several rows in one process.

Used as `python -m offload_repro.produce.compiled.tpu_compile OUT_JSON TOPOLOGY ARGS_JSON [HLO_DIR]`,
where ARGS_JSON maps a name to a row's MaxText `key=value` list; with HLO_DIR, each compiled
program's scheduled HLO is written there as `<name>.hlo.gz` (what the step-time model replays).
MaxText's `train_compile` (abstract state, sharding, remat policies, `jit_and_compile`) is used
unchanged with `compile_topology`; libtpu compiles for the named topology (v5e-1) whether or not
a TPU is attached: on the chip it takes seconds, on a CPU-only machine minutes. Every program is
compiled in this one process, so MaxText is imported once.

What XLA:TPU says when a program does not fit is kept in its own words: it refuses at compile
time ("CompileTimeHbmOom ... required for HLO temporaries (16.43G) exceeds available HBM
(15.75G)"), so on a TPU an out-of-memory row is decided by the compiler, and the figures it
names are kept as numbers.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from offload_repro.core.failure import hbm_oom
from offload_repro.core.files import write_gzip_text, write_json
from offload_repro.core.grouped_matmul import install_from
from offload_repro.core.memory_analysis import memory_analysis_dict
from offload_repro.produce.compiled.aot_compile import jit_train_step


def compile_one(topology: str, maxtext_argv: list[str], hlo_file: Path | None = None) -> dict[str, Any]:
    started = time.monotonic()
    try:
        argv = [*maxtext_argv, f"compile_topology={topology}", "compile_topology_num_slices=1"]
        compiled, _, _ = jit_train_step(argv)
        if hlo_file is not None:
            write_gzip_text(hlo_file, compiled.as_text())
        record: dict[str, Any] = {
            "status": "ok",
            "message": None,
            "memory": memory_analysis_dict(compiled.memory_analysis()),
        }
    except Exception as err:  # the compiler's refusal is the result; anything else is an error
        message = f"{type(err).__name__}: {err}"[-4000:]
        oom = hbm_oom(message)
        record = {"status": "oom" if oom else "error", "message": message, "memory": None, "hbm_oom": oom}
    record["compile_seconds"] = round(time.monotonic() - started, 2)
    return record


def main(out_json: str, topology: str, arguments_json: str, hlo_dir: str | None = None) -> int:
    import maxtext

    base = str(Path(maxtext.__file__).parent / "configs" / "base.yml")
    programs = json.loads(Path(arguments_json).read_text(encoding="utf-8"))
    results = {}
    for name, maxtext_argv in programs.items():
        hlo_file = Path(hlo_dir) / f"{name}.hlo.gz" if hlo_dir else None
        results[name] = compile_one(topology, [base, *maxtext_argv], hlo_file)
        print(f"tpu_compile: {name}: {results[name]['status']} in {results[name]['compile_seconds']} s", flush=True)
    write_json(out_json, {"topology": topology, "programs": results})
    return 0 if all(r["status"] != "error" for r in results.values()) else 1


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: python -m offload_repro.produce.compiled.tpu_compile OUT_JSON TOPOLOGY ARGS_JSON [HLO_DIR]")
    install_from(os.environ)  # the rows' grouped matmul, as their runs have it
    sys.exit(main(*sys.argv[1:]))
