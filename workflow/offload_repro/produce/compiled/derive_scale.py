"""Derive a one-GPU scale rule from compiled memory, not by trial and error on the device.

For each candidate value of one scale parameter (say DeepSeek's decoder layers), compile the
rows that carry the source's capacity contrast for the target's GPU and keep the candidate
whose three outcomes match the source (device-save fits at micro batch 2 and not at 8;
offload fits at 8) with the widest margin, so that the static estimate's known gaps (NCCL
scratch, cuDNN workspace) are least likely to flip an outcome.

    python -m offload_repro.produce.compiled.derive_scale h200-1 deepseek base_num_decoder_layers 4 8 12 16
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from offload_repro.core import memory
from offload_repro.core.data import Row, Target, load_rows, load_target
from offload_repro.core.files import REPO_ROOT, write_json
from offload_repro.produce.compiled.compiled_row import compile_row

# The source's capacity contrast (Table 1, rows 4 and 5, and the optimized offload row).
CONTRAST = {"deepseek-device-mb2": True, "deepseek-device-mb8": False, "deepseek-offload-optimized": True}


def with_parameter(target: Target, family: str, parameter: str, value: int) -> Target:
    spec = copy.deepcopy(target.spec)
    spec["scale"].setdefault("families", {}).setdefault(family, {})[parameter] = value
    return Target(target.name, target.kind, target.launcher, spec)


def choose(candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The candidate reproducing the contrast whose smallest |margin| is largest."""
    matching = [c for c in candidates if all(c["fits"][row] == fits for row, fits in CONTRAST.items())]
    return max(matching, key=lambda c: min(abs(m) for m in c["margin_gib"].values()), default=None)


def derive(target: Target, rows: list[Row], family: str, parameter: str, values: list[int]) -> dict[str, Any]:
    by_id = {row.id: row for row in rows}
    work = Path(tempfile.mkdtemp(prefix="derive-scale-"))

    def one(value: int) -> dict[str, Any]:
        variant = with_parameter(target, family, parameter, value)
        fits, margins, device = {}, {}, {}
        for row_id in CONTRAST:
            out, work_dir = work / f"{value}-{row_id}.json", work / f"{value}-{row_id}"
            result = compile_row(by_id[row_id], variant, out, work_dir)
            if result["status"] != "ok":
                raise RuntimeError(f"{parameter}={value}, {row_id}: {result['message']}")
            fits[row_id], margins[row_id] = result["fits"], round(result["margin_gib"], 2)
            device[row_id] = round(memory.gib(result["device_bytes"]), 2)
        return {"value": value, "fits": fits, "margin_gib": margins, "device_gib": device}

    with ThreadPoolExecutor(max_workers=2) as pool:  # each compile is its own process
        candidates = list(pool.map(one, values))
    chosen = choose(candidates)
    return {
        "target": target.name,
        "parameter": f"{family}.{parameter}",
        "candidates": candidates,
        "chosen": chosen["value"] if chosen else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target")
    parser.add_argument("family")
    parser.add_argument("parameter")
    parser.add_argument("values", nargs="+", type=int)
    args = parser.parse_args(argv)
    tables = sorted(str(p) for p in (REPO_ROOT / "experiments" / "rows").glob("*.yaml"))
    result = derive(load_target(args.target), load_rows(tables), args.family, args.parameter, args.values)
    out = REPO_ROOT / "results" / "derivations" / f"{args.target}.json"
    write_json(out, result)
    print(json.dumps(result, indent=2))
    print(f"written to {out}", file=sys.stderr)
    return 0 if result["chosen"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
