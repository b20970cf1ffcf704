"""Does a speed lever of the compile give the same program? And how much cheaper is the compile?

`PYTHONPATH=workflow python workflow/scripts/identity.py LEVER [ROW ...] [--target gb200-nvl72]`
compiles each row (all of them for none named) for the target as the workflow does
(`program_cache.compile_program`) twice, without the lever and with it, and prints whether the
memory analysis (with the fields that differ, if any), the optimized HLO's digest, the HLO summary
(host buffers, copies) and XLA's memory warnings are byte-identical, and each compile's wall and
CPU seconds (inside the compile process; CPU: the compile process and the ptxas processes it ran).
The levers:

- `autotune`: `--xla_gpu_autotune_level=0` with the other compile-only flags (LLVM's kernel
  optimisation off among them), against XLA's default autotuning and optimisation, both with the
  ptxas stand-in. A row's two compiles run side by side, so both meet the same load. The program
  digest may differ: untuned fusions carry a default backend config.
- `machine-code`: the stand-in of `produce/compiled/assembler.py`, which assembles no machine
  code, against the real ptxas, both with the compile-only flags. A row's two compiles run one
  after the other, each alone, so that their times are comparable.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from glob import glob
from pathlib import Path
from typing import Any

from offload_repro.core.data import Row, load_rows, load_target
from offload_repro.core.files import REPO_ROOT
from offload_repro.produce.compiled.program_cache import COMPILE_ONLY_FLAGS, DEFAULT_AUTOTUNING, compile_program


@dataclass(frozen=True)
class Lever:
    """A speed lever: `compile_program`'s arguments without it (as XLA compiles by default) and with
    it (as the workflow compiles), each compile's name, and whether a row's two run side by side."""

    without: dict[str, Any]
    with_it: dict[str, Any]
    names: tuple[str, str]
    side_by_side: bool


LEVERS = {
    "autotune": Lever(
        {"compile_only_flags": DEFAULT_AUTOTUNING},
        {"compile_only_flags": COMPILE_ONLY_FLAGS},
        ("default", "autotune-0"),
        side_by_side=True,
    ),
    "machine-code": Lever({"machine_code": True}, {}, ("ptxas", "stand-in"), side_by_side=False),
}


def same(a: Any, b: Any) -> str:
    """'yes' when both are byte-identical as JSON, else 'NO'."""
    return "yes" if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) else "NO"


def compared(without: dict[str, Any], with_it: dict[str, Any]) -> str:
    """The table's columns memory | HLO sha256 | HLO summary | memory warnings of two compiles; a
    memory analysis that differs names the fields that do."""
    a, b = without["stats"], with_it["stats"]
    memory = same(a["memory"], b["memory"])
    if memory != "yes":
        memory += f" {[key for key in a['memory'] if a['memory'][key] != b['memory'].get(key)]}"
    hlo = [same(a[key], b[key]) for key in ("hlo_sha256", "hlo")]
    return " | ".join([memory, *hlo, same(without["memory_warnings"], with_it["memory_warnings"])])


def rows_asked(ids: list[str]) -> list[Row]:
    """The rows of experiments/rows/ with these ids, in table order (all of them for none)."""
    rows = load_rows(sorted(glob(str(REPO_ROOT / "experiments" / "rows" / "*.yaml"))))
    return [row for row in rows if not ids or row.id in ids]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lever", choices=LEVERS)
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--target", default="gb200-nvl72")
    options = parser.parse_args()
    lever, target = LEVERS[options.lever], load_target(options.target)
    scratch = Path(tempfile.mkdtemp(prefix=f"{options.lever}-identity-"))

    def compiled(row: Row, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return compile_program(row, target, scratch / name / row.id, "k", **arguments)

    plain, fast = lever.names
    print(f"{options.lever}: {plain} against {fast}; target {target.name}; s = inside the compile process")
    print(
        "| row | memory | HLO sha256 | HLO summary | memory warnings"
        f" | wall s, {plain} | wall s, {fast} | CPU s, {plain} | CPU s, {fast} |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with ThreadPoolExecutor(max_workers=2 if lever.side_by_side else 1) as pool:
        for row in rows_asked(options.rows):
            first = pool.submit(compiled, row, plain, lever.without)
            second = pool.submit(compiled, row, fast, lever.with_it)
            without, with_it = first.result(), second.result()
            if without["status"] != "ok" or with_it["status"] != "ok":
                print(f"| {row.id} | error: {without['message'] or with_it['message']} |", flush=True)
                continue
            a, b = without["stats"], with_it["stats"]
            print(
                f"| {row.id} | {compared(without, with_it)}"
                f" | {a['compile_seconds']:.1f} | {b['compile_seconds']:.1f}"
                f" | {a['cpu_seconds']:.1f} | {b['cpu_seconds']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
