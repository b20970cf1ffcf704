"""The jobs of one run: which rows, on which targets, with what resources, from which results.

Snakemake's rule files read a `Plan` and stay thin; every decision and refusal is here, where
tests can reach it. What a run judges comes from its command alone: an optional stage (what-if,
sensitivity, validation) enters only when its config key asks for it, never because its results
happen to lie in `results/`, so the same command gives the same verdicts.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offload_repro.cluster.slurm import container_for, job_resources, preflight_resources
from offload_repro.core.assumptions import check_ids, variants
from offload_repro.core.data import DataError, Row, Target, kept_run_targets, load_rows, load_target
from offload_repro.core.files import DEVICE_RESULTS_DIR, REPO_ROOT, read_yaml
from offload_repro.core.measured_elsewhere import load_measured, load_validation
from offload_repro.core.outcome_settings import chosen as chosen_changes
from offload_repro.core.outcome_settings import load as load_outcome_settings
from offload_repro.core.outcome_settings import settings_of
from offload_repro.core.validation_record import unrecorded_pairs
from offload_repro.core.variants import resolved, schedules_by_profile, variant_id

READS = ("experiments/frontier.yaml", "experiments/speed.yaml")
TARGETS_DIR = "experiments/targets"


def as_bool(value: Any) -> bool:
    """--config parses "true" as a string and "True" as a boolean: both spellings mean on."""
    return str(value).lower() == "true"


FRONTIER_PRIORITY = 2  # above every compile of a row (Plan.compile_priority)


@dataclass(frozen=True)
class Plan:
    rows: list[Row]
    target: Target
    compile_target: Target
    run_resources: dict[str, Any]  # what one row's job asks for (a cluster's, or the local GPUs)
    preflight: list[str]  # a SLURM target's preflight result, which its rows wait for
    preflight_resources: dict[str, Any]
    preflight_compiled: list[str]  # the compiles a SLURM GPU target's preflight checks host memory against
    grid_targets: list[str]  # every GPU target each row is compiled for
    frontier_targets: list[str]  # the targets whose capacity frontier is searched (what-if only)
    policies: list[str]
    variants: dict[str, dict[str, Any]]  # variant id -> {settings, rows}: the sensitivity stage's alternatives
    calibration_target: str
    evidence_files: dict[str, list[str]]  # by producer
    page_targets: list[str]  # this run's target, the device targets, then every earlier one whose page exists
    device_targets: list[str]  # targets whose measured runs are kept as data: their pages are built from them
    target_files: list[str]  # every target file: the hardware classes claims are judged by come from them
    sensitivity: bool  # each alternative assumption compiled
    measured_runs: dict[str, str]  # run id -> its target (experiments/measured-elsewhere/), with validation
    # the alternatives the source's outcomes chose (experiments/outcome-settings.yaml's record): every
    # compile for a GPU takes them; each {id, settings, rows}
    chosen: list[dict[str, Any]]
    infer: bool  # the declared search for them runs (--config infer=True)

    @property
    def row_ids(self) -> list[str]:
        return [row.id for row in self.rows]

    def chosen_for(self, row: str, leaving_out: str | None = None) -> list[dict[str, Any]]:
        """The chosen alternatives that affect `row` ({id, settings}), less those of the setting
        `leaving_out` (an alternative of that setting takes its place)."""
        return [
            {"id": c["id"], "settings": c["settings"]}
            for c in self.chosen
            if row in c["rows"] and c["id"].partition(".")[0] != leaving_out
        ]

    @property
    def chosen_option(self) -> str:
        """`--chosen` of the commands that build rows at full scale (compile, analytic, frontier)."""
        return f"--chosen {shlex.quote(json.dumps(self.chosen))}" if self.chosen else ""

    @property
    def defaults_rows(self) -> list[str]:
        """The rows the chosen settings change: each compiled under the defaults too, so that every
        claim is also judged under the defaults."""
        return [row for row in self.row_ids if self.chosen_for(row)]

    def defaults_compiled(self, gpu_target: str) -> list[str]:
        """Every row's compile under the defaults: its own where the chosen settings change it."""
        changed = set(self.defaults_rows)
        return [
            f"results/defaults/compiled/{row}.json" if row in changed else f"results/compiled/{gpu_target}/{row}.json"
            for row in self.row_ids
        ]

    def defaults_evidence_inputs(self, target: str) -> list[str]:
        """This run's evidence with the compile target's programs, their prediction and the analytic
        bytes under the defaults; the what-if stage's results are left out (it runs under the chosen
        settings)."""
        name = self.compile_target.name
        compiled = self.defaults_compiled(name)
        swapped = {
            f"results/compiled/{name}/{row}.json": path for row, path in zip(self.row_ids, compiled, strict=True)
        }
        swapped[f"results/predicted/{name}.json"] = f"results/defaults/predicted/{name}.json"
        swapped["results/analytic.json"] = "results/defaults/analytic.json"
        return [
            swapped.get(path, path)
            for producer, paths in self.evidence_files.items()
            if producer not in ("frontier", "budget")
            for path in paths
        ]

    def variant_settings(self, name: str, row: str) -> list[dict[str, Any]]:
        """What `row` is compiled under for the alternative `name`: the chosen alternatives of other
        settings that affect it, then the alternative itself."""
        setting = name.partition(".")[0]
        return [c["settings"] for c in self.chosen_for(row, leaving_out=setting)] + [self.variants[name]["settings"]]

    def evidence_inputs(self, target: str) -> list[str]:
        """The result files a target's evidence table is built from: this run's, or for a target
        whose runs are kept as data, those runs, its probe and the analytic bytes (none of this
        run's compiles: a device tier judges outcomes on its own chip, no GB200 number)."""
        if target == self.target.name:
            return [path for paths in self.evidence_files.values() for path in paths]
        predicted = [f"results/{target}/device-prediction.json"] if kept_programs(target) else []
        return [*kept_results(target), *predicted, "results/analytic.json"]

    @property
    def variant_files(self) -> list[str]:
        return [
            f"results/whatif/assumptions/{name}/{row}.json"
            for name, variant in self.variants.items()
            for row in variant["rows"]
        ]

    @property
    def variant_predictions(self) -> list[str]:
        """Each alternative's prediction of every row (its speed claims re-judged under it)."""
        return [f"results/whatif/assumptions/{name}/predicted.json" for name in self.variants]

    def variant_profile(self, name: str) -> list[str]:
        """The latency profile an alternative schedules by (its `latency_profile`), if any."""
        if not schedules_by_profile(self.variants[name]["settings"]):
            return []
        return [f"results/profiles/{self.compile_target.name}.pbtxt"]

    def variant_compiled(self, name: str) -> list[str]:
        """Every row's compile under one alternative: its own where it affects the row, else the default."""
        varied = set(self.variants[name]["rows"])
        return [
            f"results/whatif/assumptions/{name}/{row}.json"
            if row in varied
            else f"results/compiled/{self.compile_target.name}/{row}.json"
            for row in self.row_ids
        ]

    @property
    def varied_rows(self) -> list[str]:
        return sorted({row for variant in self.variants.values() for row in variant["rows"]})

    def compile_priority(self, gpu_target: str) -> int:
        """Among compiles ready to run, a frontier target's rows first (higher runs first): its
        frontier searches, each a chain of compiles that waits for the target's rows, then start
        early and overlap the other targets' rows instead of running alone at the end. Frontier
        jobs themselves come before any row (FRONTIER_PRIORITY)."""
        return 1 if gpu_target in self.frontier_targets else 0

    def calibration_source(self, gpu_target: str) -> list[str]:
        """The calibration target's prediction, which another target's prediction scales from."""
        if gpu_target == self.calibration_target:
            return []
        return [f"results/predicted/{self.calibration_target}.json"]


def chosen_rows(all_rows: list[Row], wanted: list[str]) -> list[Row]:
    if unknown := sorted(set(wanted) - {row.id for row in all_rows}):
        raise DataError(f"config 'rows': unknown row ids {unknown}; known: {[row.id for row in all_rows]}")
    return [row for row in all_rows if not wanted or row.id in wanted]


def check_assumption_ids(all_rows: list[Row], targets: list[Target]) -> None:
    """Every assumption a row or target names is stated in experiments/assumptions.yaml."""
    check_ids(
        {f"{row.source_file}: row '{row.id}'": row.assumptions for row in all_rows}
        | {f"{TARGETS_DIR}/{t.name}.yaml: compile": t.spec.get("compile", {}).get("assumptions", []) for t in targets},
        all_rows,
    )


def run_resources(target: Target, global_resources: Mapping[str, Any]) -> dict[str, Any]:
    """A cluster's job resources; on a local GPU, one MaxText process (or the probe) at a time,
    since each takes 92-95% of its memory, which Snakemake enforces only with --resources gpu=N."""
    if target.kind == "gpu" and target.launcher == "local":
        gpus = target.spec["hardware"]["devices"]
        if "gpu" not in global_resources:
            raise DataError(
                f"target '{target.name}' runs on this machine's GPU, one MaxText process at a time: add"
                f" --resources gpu={gpus} (the number of GPUs here) to the snakemake command"
            )
        return {"gpu": gpus}
    return job_resources(target)


def refuse_unpinned(target: Target, rows: list[Row], runtime: str, allow_unpinned: bool) -> None:
    """A GPU run on a cluster refuses an image without a digest, before anything is submitted."""
    if target.kind == "gpu" and target.launcher == "slurm":
        for row in rows:
            container_for(row).image(runtime, allow_unpinned)


def whatif_targets(frontier_targets: list[str]) -> list[str]:
    """Every GPU target a cluster would run (SLURM, with a compile section): a new file enters by itself."""
    targets = [load_target(path.stem) for path in sorted((REPO_ROOT / TARGETS_DIR).glob("*.yaml"))]
    found = [t.name for t in targets if t.kind == "gpu" and t.launcher == "slurm" and "compile" in t.spec]
    if unknown := sorted(set(frontier_targets) - set(found)):
        raise DataError(f"config 'frontier_targets': {unknown} are not GPU targets with a compile section")
    return found


def variants_of(row_ids: list[str], chosen: list[str]) -> dict[str, dict[str, Any]]:
    """Each alternative of experiments/assumptions.yaml, with the rows of this run it affects; the
    alternatives chosen by the source's outcomes are left out (the main job compiles them)."""
    return {
        variant_id(assumption, alternative): {
            "settings": resolved(assumption, alternative["settings"]),
            "rows": [row for row in assumption["affects"] if row in row_ids],
        }
        for assumption, alternative in variants()
        if variant_id(assumption, alternative) not in chosen
    }


def kept_results(target: str) -> list[str]:
    """A device target's kept result files: its runs and, where it was probed, its host link."""
    kept = REPO_ROOT / DEVICE_RESULTS_DIR / target
    files = [*sorted(kept.glob("runs/*.json")), *sorted(kept.glob("probe.json"))]
    return [str(path.relative_to(REPO_ROOT)) for path in files]


def kept_programs(target: str) -> list[str]:
    """A device target's kept programs (the scheduled HLO of each program its runs ran, and their
    list), from which its steps are predicted; [] where none are kept."""
    kept = REPO_ROOT / DEVICE_RESULTS_DIR / target / "programs"
    if not (kept / "programs.json").exists():
        return []
    files = [kept / "programs.json", *sorted(kept.glob("*.hlo.gz"))]
    return [str(path.relative_to(REPO_ROOT)) for path in files]


def kept_sweep(target: str) -> list[str]:
    """A device target's kept sweep (each point's record and scheduled HLO), from which its placement
    pairs are predicted; [] where no sweep is kept yet."""
    kept = REPO_ROOT / DEVICE_RESULTS_DIR / target / "sweep"
    files = [*sorted(kept.glob("points/*.json")), *sorted(kept.glob("programs/*.hlo.gz"))]
    return [str(path.relative_to(REPO_ROOT)) for path in files]


def pair_devices(targets: list[str]) -> list[str]:
    """The targets whose kept programs or sweep give the step-time model's pairs measured on a device."""
    return [name for name in dict.fromkeys(targets) if kept_programs(name) or kept_sweep(name)]


def device_targets(current: str) -> list[str]:
    """Every target but this run's whose device tier's runs are kept as data, and that has a target file."""
    found = kept_run_targets()
    for name in found:
        if not (REPO_ROOT / TARGETS_DIR / f"{name}.yaml").exists():
            raise DataError(f"{DEVICE_RESULTS_DIR}/{name}: kept results of a target with no {TARGETS_DIR}/{name}.yaml")
    return [name for name in found if name != current]


def earlier_targets(current: str, exists: Callable[[str], bool], results: Path) -> list[str]:
    """Targets other than this run's whose pages exist: the entry page keeps linking them."""
    names = [verdicts.parent.name for verdicts in sorted(results.glob("*/verdicts.json"))]
    pages = ("results/report/{}.html", "results/{}/verdicts.json", "results/{}/evidence.json")
    return [name for name in names if name != current and all(exists(page.format(name)) for page in pages)]


def make_plan(
    config: dict[str, Any],
    global_resources: Mapping[str, Any],
    exists: Callable[[str], bool] = os.path.exists,
    results: Path = Path("results"),
) -> Plan:
    """The plan of a run from its (schema-validated) configuration; `exists` and `results` say
    what is on disk, relative to the working directory."""
    all_rows = load_rows(config["tables"])
    target, compile_target = load_target(config["target"]), load_target(config["compile_target"])
    check_assumption_ids(all_rows, [target, compile_target])
    rows = chosen_rows(all_rows, config["rows"])
    row_ids = [row.id for row in rows]
    if "compile" not in compile_target.spec:
        where = f"{TARGETS_DIR}/{compile_target.name}.yaml"
        raise DataError(f"{where}: field 'compile': needed for config 'compile_target'")
    refuse_unpinned(target, rows, config["container_runtime"], as_bool(config["allow_unpinned_container"]))

    whatif, sensitivity, validation = (as_bool(config[key]) for key in ("whatif", "assumptions", "validation"))
    chosen = chosen_changes(load_outcome_settings())
    measured: dict[str, str] = {}
    if validation:
        runs = load_measured()
        # a record out of step with the runs it is over stops here, before any of their compiles
        if differs := unrecorded_pairs(runs, load_validation()):
            raise DataError("; ".join(differs))
        measured = {run.id: run.target for run in runs}
    found_whatif = whatif_targets(config["frontier_targets"]) if whatif else []
    grid = [compile_target.name, *[name for name in found_whatif if name != compile_target.name]]
    slurm_gpu = target.kind == "gpu" and target.launcher == "slurm"
    if slurm_gpu and target.name not in grid:
        grid.append(target.name)
    policies = [policy["id"] for policy in read_yaml(REPO_ROOT / "experiments/frontier.yaml")["policies"]]
    kept = device_targets(target.name)
    speed = read_yaml(REPO_ROOT / "experiments/speed.yaml")

    evidence = {
        "run": [f"results/{target.name}/runs/{row}.json" for row in row_ids],
        "compile": [f"results/compiled/{name}/{row}.json" for name in grid for row in row_ids],
        "analytic": ["results/analytic.json"],
        "predicted": [f"results/predicted/{name}.json" for name in grid],
    }
    frontiers = config["frontier_targets"] if whatif else []
    if whatif:
        evidence["frontier"] = [f"results/whatif/{name}/frontier-{p}.json" for name in frontiers for p in policies]
        evidence["budget"] = ["results/whatif/budget.json"]
    if validation:
        evidence["validation"] = ["results/validation/model.json"]
    if target.kind == "gpu" and target.launcher == "local":  # a single local GPU also measures its host link
        evidence["probe"] = [f"results/{target.name}/probe.json"]

    return Plan(
        rows=rows,
        target=target,
        compile_target=compile_target,
        run_resources=run_resources(target, global_resources),
        preflight=[f"results/{target.name}/preflight.json"] if target.launcher == "slurm" else [],
        preflight_resources=preflight_resources(target) if target.launcher == "slurm" else {},
        preflight_compiled=[f"results/compiled/{target.name}/{row}.json" for row in row_ids] if slurm_gpu else [],
        grid_targets=grid,
        frontier_targets=frontiers,
        policies=policies,
        variants=variants_of(row_ids, chosen) if sensitivity else {},
        calibration_target=speed["calibration"]["target"],
        evidence_files=evidence,
        page_targets=[
            target.name,
            *kept,
            *[name for name in earlier_targets(target.name, exists, results) if name not in kept],
        ],
        device_targets=kept,
        target_files=sorted(f"{TARGETS_DIR}/{path.name}" for path in (REPO_ROOT / TARGETS_DIR).glob("*.yaml")),
        sensitivity=sensitivity,
        measured_runs=measured,
        chosen=settings_of(chosen),
        infer=as_bool(config["infer"]),
    )
