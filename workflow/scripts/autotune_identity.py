"""Does `--xla_gpu_autotune_level=0` change the GB200 compile? Compiles every row both ways.

`PYTHONPATH=workflow python workflow/scripts/autotune_identity.py [ROW ...] [--jobs 2]`
compiles each row (compile.compile_row, target gb200-nvl72) as the workflow does and again with
the flag added to its XLA_FLAGS, and prints whether the memory analysis is byte-identical, the
HLO hash and the HLO summary (collect's host buffers, copies, ...) too, and both compile times.
A row's two compiles run side by side (with --jobs 2), so both meet the same load.
--reuse prints the table from the results of an earlier run.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from identity import rows_asked, same

from offload_repro.core.data import Row, load_target
from offload_repro.core.files import REPO_ROOT
from offload_repro.produce.compiled.compiled_row import COMPILE_ONLY_FLAGS, DEFAULT_AUTOTUNING, compile_row

FLAG = COMPILE_ONLY_FLAGS[-1]
OUT = REPO_ROOT / "results" / "autotune-identity"


def compile_variant(row: Row, variant: str, reuse: bool) -> dict[str, Any]:
    work = OUT / variant / row.id
    if reuse:
        return json.loads(Path(work / "result.json").read_text())
    flags = COMPILE_ONLY_FLAGS if variant == "autotune-0" else DEFAULT_AUTOTUNING
    gb200 = load_target("gb200-nvl72")
    return compile_row(row, gb200, work / "result.json", work / "work", compile_only_flags=flags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reuse", action="store_true")
    options = parser.parse_args()
    rows = rows_asked(options.rows)
    variants = ("default", "autotune-0")
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        futures = {(row.id, v): pool.submit(compile_variant, row, v, options.reuse) for row in rows for v in variants}
        results = {key: future.result() for key, future in futures.items()}

    print(f"XLA_FLAGS += {FLAG}; target gb200-nvl72; compile s = inside the compile process (no import)")
    print(f"| {'row':31} | memory identical | HLO sha256 | HLO summary | compile s default | compile s {FLAG[2:]} |")
    print(f"|{'-' * 33}|------------------|------------|-------------|-------------------|{'-' * (len(FLAG) + 9)}|")
    for row in rows:
        default, tuned = results[(row.id, "default")], results[(row.id, "autotune-0")]
        if default["status"] != "ok" or tuned["status"] != "ok":
            print(f"| {row.id:31} | error: {default['message'] or tuned['message']}")
            continue
        memory = same(default["memory"], tuned["memory"])
        if memory != "yes":
            memory += f" {[k for k in default['memory'] if default['memory'][k] != tuned['memory'].get(k)]}"
        hlo = f"{same(default['hlo_sha256'], tuned['hlo_sha256']):10} | {same(default['hlo'], tuned['hlo']):11}"
        seconds = f"{default['compile_seconds']:17.1f} | {tuned['compile_seconds']:{len(FLAG) + 7}.1f}"
        print(f"| {row.id:31} | {memory:16} | {hlo} | {seconds} |")


if __name__ == "__main__":
    main()
