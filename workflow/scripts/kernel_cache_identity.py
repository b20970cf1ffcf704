"""Does a compile that starts from a row's kept kernels give the same program? And how much faster?

`PYTHONPATH=workflow python workflow/scripts/kernel_cache_identity.py [ROW ...] [--target gb200-nvl72]
[--fork-server]` compiles each row for the target as the workflow does (`program.compile_program`):
once with no kernel cache, once into an empty kernel file (which keeps its kernels) and once more
from that file, as a compile after an edit of the compiling code would. It prints whether the
memory analysis, the optimized HLO's digest and the HLO summary (host buffers, copies) of the
last compile are byte-identical to those of the one without a cache, and the three compile
times. The first two compiles of a row run side by side, so both meet the same load.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from glob import glob
from pathlib import Path
from typing import Any

from offload_repro.core import forkserver
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.files import REPO_ROOT
from offload_repro.core.process import Launcher, run_subprocess
from offload_repro.produce.program import compile_program


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

    print(f"target {target.name}; compile s = inside the compile process (no import)")
    print("| row | memory identical | HLO sha256 | HLO summary | s, no cache | s, empty cache | s, kept kernels |")
    print("|---|---|---|---|---|---|---|")
    with ThreadPoolExecutor(max_workers=2) as pool:
        for row in rows:
            kept = scratch / "kernels" / f"{row.id}.bin"

            def compiled(label: str, kernels: Path | None, row=row) -> dict[str, Any]:
                work = scratch / label / row.id
                return compile_program(row, target, work, "k", launcher=launcher, kernels=kernels)

            plain = pool.submit(compiled, "plain", None)
            first = pool.submit(compiled, "first", kept)
            without, filled = plain.result(), first.result()
            again = compiled("again", kept)
            if any(result["status"] != "ok" for result in (without, filled, again)):
                print(f"| {row.id} | error: {without['message'] or filled['message'] or again['message']} |")
                continue
            a, b = without["stats"], again["stats"]
            print(
                f"| {row.id} | {same(a['memory'], b['memory'])} | {same(a['hlo_sha256'], b['hlo_sha256'])}"
                f" | {same(a['hlo'], b['hlo'])} | {a['compile_seconds']:.1f} | {filled['stats']['compile_seconds']:.1f}"
                f" | {b['compile_seconds']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
