"""Derive a one-GPU scale rule from compiled memory, not by trial and error on the device.

For each candidate value of one scale parameter (say DeepSeek's decoder layers), compile the
rows that carry the source's capacity contrast for the target's GPU and keep the candidate
whose three outcomes match the source (device-save fits at micro batch 2 and not at 8;
offload fits at 8) with the widest margin, so that the static estimate's known gaps (NCCL
scratch, cuDNN workspace) are least likely to flip an outcome.

    python -m offload_repro.produce.compiled.derive_scale h200-1 deepseek base_num_decoder_layers 4 8 12 16

A TPU target's candidates are compiled by libtpu for its topology (produce/compiled/tpu_compile.py),
all in one process; libtpu compiles for the chip with or without one attached, to the same bytes. A TPU
program's need is XLA's own peak; one XLA:TPU refuses is out of memory by the margin it names.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from offload_repro.core import maxtext_args, memory
from offload_repro.core.data import Row, Target, load_rows, load_target
from offload_repro.core.files import REPO_ROOT, read_json, write_atomically, write_json
from offload_repro.core.process import run_subprocess
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


def tpu_outcome(program: dict[str, Any], capacity_bytes: int) -> tuple[bool, float, float]:
    """(fits, margin GiB, need GiB) of one TPU program: XLA's peak against the chip's memory, or the
    sizes XLA:TPU named when it refused the program."""
    if program["status"] == "oom":
        need, available = program["hbm_oom"]["required_gib"], program["hbm_oom"]["available_gib"]
        return False, round(available - need, 2), need
    if program["status"] != "ok":
        raise RuntimeError(program["message"])
    peak = program["memory"]["peak_memory_in_bytes"]
    return peak <= capacity_bytes, round(memory.gib(capacity_bytes - peak), 2), round(memory.gib(peak), 2)


def tpu_candidates(
    target: Target, by_id: dict[str, Row], work: Path, family: str, parameter: str, values: list[int]
) -> list[dict[str, Any]]:
    """Compile the contrast rows under every candidate, in one process (libtpu allows one process
    at a time on a machine), and read their outcomes."""
    variants = {value: with_parameter(target, family, parameter, value) for value in values}
    programs = {
        f"{value}/{row_id}": maxtext_args.as_arguments(maxtext_args.target_overrides(by_id[row_id], variant))
        for value, variant in variants.items()
        for row_id in CONTRAST
    }
    arguments, out, log = work / "arguments.json", work / "programs.json", work / "compile.log"
    write_json(arguments, programs)
    # One process compiles every row, so under one XLA_FLAGS: the rows' own less XLA:GPU's, which mean
    # nothing to XLA:TPU (the contrast rows differ only in those).
    flags = {" ".join(maxtext_args.read_flags(maxtext_args.xla_flags(by_id[r]), target)) for r in CONTRAST}
    if len(flags) != 1:
        raise ValueError(f"the contrast rows differ in XLA flags a TPU reads: {sorted(flags)}")
    env = maxtext_args.environment(by_id[next(iter(CONTRAST))], target) | {"XLA_FLAGS": flags.pop()}
    topology = target.spec["hardware"]["topology"]
    command = [sys.executable, "-m", "offload_repro.produce.compiled.tpu_compile", str(out), topology, str(arguments)]
    returncode, _ = run_subprocess(command, env, work, log)
    if not out.exists():
        raise RuntimeError(f"the compile process ended ({returncode}) without a result; see {log}")
    compiled = read_json(out)["programs"]
    capacity = target.spec["hardware"]["device_memory_bytes"]
    candidates = []
    for value in values:
        outcomes = {row_id: tpu_outcome(compiled[f"{value}/{row_id}"], capacity) for row_id in CONTRAST}
        candidates.append(
            {
                "value": value,
                "fits": {row_id: o[0] for row_id, o in outcomes.items()},
                "margin_gib": {row_id: o[1] for row_id, o in outcomes.items()},
                "device_gib": {row_id: o[2] for row_id, o in outcomes.items()},
                "compile_seconds": {row_id: compiled[f"{value}/{row_id}"]["compile_seconds"] for row_id in CONTRAST},
            }
        )
    return candidates


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

    if target.kind == "tpu":
        candidates = tpu_candidates(target, by_id, work, family, parameter, values)
    else:
        with ThreadPoolExecutor(max_workers=2) as pool:  # each compile is its own process
            candidates = list(pool.map(one, values))
    chosen = choose(candidates)
    return {
        "target": target.name,
        "parameter": f"{family}.{parameter}",
        "candidates": candidates,
        "chosen": chosen["value"] if chosen else None,
    }


def apply(derivation: dict[str, Any], directory: Path = REPO_ROOT / "experiments" / "targets") -> str:
    """Write a derivation's chosen value into its target file, in the family's block of
    `scale.families`; returns what was done, in words. The file is edited as text, so that its
    comments stay: the one line `parameter: value` of that block is replaced."""
    path = directory / f"{derivation['target']}.yaml"
    family, parameter = derivation["parameter"].split(".")
    chosen = derivation["chosen"]
    if chosen is None:
        raise ValueError(f"{path}: the derivation chose no value of {family}.{parameter}: nothing to apply")
    text = path.read_text(encoding="utf-8")
    block = re.search(rf"(?m)^(\s+){family}:\n((?:\1\s+.*\n)+)", text)
    line = re.compile(rf"(?m)^(\s+{parameter}:\s*)(\d+)")
    found = line.findall(block.group(2)) if block else []
    if len(found) != 1:
        raise ValueError(f"{path}: field 'scale.families.{family}.{parameter}': not found once in the family's block")
    if int(found[0][1]) == chosen:
        return f"{path}: scale.families.{family}.{parameter} is {chosen}, as derived"
    edited = block.group(2).replace(f"{found[0][0]}{found[0][1]}", f"{found[0][0]}{chosen}", 1)
    write_atomically(path, text[: block.start(2)] + edited + text[block.end(2) :])
    return f"{path}: scale.families.{family}.{parameter} set to {chosen} (was {found[0][1]}), as derived"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--apply"]:  # write a derivation's choice into its target file
        print(apply(read_json(Path(argv[1]))))
        return 0
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
