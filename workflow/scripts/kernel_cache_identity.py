"""Does a compile that starts from a row's kept kernels give the same program? And how much faster?

`PYTHONPATH=workflow python workflow/scripts/kernel_cache_identity.py [ROW ...] [--target gb200-nvl72]`
compiles each row for the target as the workflow does (`program_cache.compile_program`):
once with no kernel cache, once into an empty kernel file (which keeps its kernels) and once more
from that file, as a compile after an edit of the compiling code would. It prints whether the
memory analysis, the optimized HLO's digest and the HLO summary (host buffers, copies) of the
last compile are byte-identical to those of the one without a cache, and the three compile
times. The first two compiles of a row run side by side, so both meet the same load.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from identity import comparison, same_program

from offload_repro.produce.compiled.program_cache import compile_program


def main() -> None:
    target, rows, scratch = comparison(__doc__, "kernel-cache-identity-")
    print(f"target {target.name}; compile s = inside the compile process (no import)")
    print("| row | memory identical | HLO sha256 | HLO summary | s, no cache | s, empty cache | s, kept kernels |")
    print("|---|---|---|---|---|---|---|")
    with ThreadPoolExecutor(max_workers=2) as pool:
        for row in rows:
            kept = scratch / "kernels" / f"{row.id}.bin"

            def compiled(label: str, kernels: Path | None, row=row) -> dict[str, Any]:
                work = scratch / label / row.id
                return compile_program(row, target, work, "k", kernels=kernels)

            plain = pool.submit(compiled, "plain", None)
            first = pool.submit(compiled, "first", kept)
            without, filled = plain.result(), first.result()
            again = compiled("again", kept)
            if any(result["status"] != "ok" for result in (without, filled, again)):
                print(f"| {row.id} | error: {without['message'] or filled['message'] or again['message']} |")
                continue
            a, b = without["stats"], again["stats"]
            seconds = (
                f"{a['compile_seconds']:.1f} | {filled['stats']['compile_seconds']:.1f} | {b['compile_seconds']:.1f}"
            )
            print(f"| {row.id} | {same_program(a, b)} | {seconds} |", flush=True)


if __name__ == "__main__":
    main()
