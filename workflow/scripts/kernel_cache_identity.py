"""Does the shared kernel cache change a compile? Compiles every row with and without it.

`PYTHONPATH=workflow python workflow/scripts/kernel_cache_identity.py [ROW ...] [--target gb200-nvl72]
[--fork-server]` compiles each row for the target twice, as the workflow does
(`program.program_for`): once with no cache at all, once through a fresh program cache whose
kernel cache the rows fill one after another (so every row after the first starts from the kernels
of those before it). It prints whether the memory analysis, the optimized HLO's digest and the HLO
summary (host buffers, copies) are byte-identical, both compile times, and the kernel cache's size.
A row's two compiles run side by side, so both meet the same load.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from glob import glob
from pathlib import Path
from typing import Any

from offload_repro.core import forkserver, gpu, provenance
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.files import REPO_ROOT
from offload_repro.core.process import Launcher, run_subprocess
from offload_repro.produce import kernel_cache
from offload_repro.produce.program import program_for


def same(a: Any, b: Any) -> str:
    return "yes" if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) else "NO"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--target", default="gb200-nvl72")
    parser.add_argument("--fork-server", action="store_true")
    options = parser.parse_args()
    target = load_target(options.target)
    rows = load_rows(sorted(glob(str(REPO_ROOT / "experiments" / "rows" / "*.yaml"))))
    rows = [row for row in rows if not options.rows or row.id in options.rows]
    scratch = Path(tempfile.mkdtemp(prefix="kernel-cache-identity-"))
    launcher: Launcher = run_subprocess
    if options.fork_server:
        launcher = forkserver.ForkServerLauncher(scratch / "fs")
    programs = scratch / "programs"
    kernels = kernel_cache.shared_path(programs, gpu.description(target), provenance.versions())

    print(f"target {target.name}; compile s = inside the compile process (no import); kernels: in the shared cache")
    print("| row | memory identical | HLO sha256 | HLO summary | compile s, no cache | with cache | kernels |")
    print("|---|---|---|---|---|---|---|")
    with ThreadPoolExecutor(max_workers=2) as pool:
        for row in rows:
            plain = pool.submit(program_for, row, target, scratch / "plain" / row.id, None, launcher=launcher)
            shared = pool.submit(program_for, row, target, scratch / "cached" / row.id, programs, launcher=launcher)
            (without, _, _), (with_cache, _, _) = plain.result(), shared.result()
            if without["status"] != "ok" or with_cache["status"] != "ok":
                print(f"| {row.id} | error: {without['message'] or with_cache['message']} |")
                continue
            a, b = without["stats"], with_cache["stats"]
            count = len(kernel_cache.read_entries(kernels) or {})
            print(
                f"| {row.id} | {same(a['memory'], b['memory'])} | {same(a['hlo_sha256'], b['hlo_sha256'])}"
                f" | {same(a['hlo'], b['hlo'])} | {a['compile_seconds']:.1f} | {b['compile_seconds']:.1f} | {count} |"
            )


if __name__ == "__main__":
    main()
