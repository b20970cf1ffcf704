"""The main job end to end, for real, on a private copy of the workflow (slow: minutes).

One `snakemake --cores 2` builds everything the default target builds: 9 MaxText training
runs on the CPU, 9 full-scale compiles for GB200, the analytic accounting, the evidence table,
verdicts and the report pages. The tests below read what it left behind; those that change
files work on a copy of it.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import stat
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from conftest import REPO, require
from offload_repro.core import warm_start
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.process import package_environment, run_subprocess
from offload_repro.plan import inputs as plan
from offload_repro.plan import sample as plan_sample
from offload_repro.present.text import fmt
from offload_repro.produce.compiled.compiled_row import DEFAULT_AUTOTUNING
from offload_repro.produce.compiled.program_cache import compile_program
from report_page import (
    label_problems,
    layout_widths,
    reading_metrics,
    rendered_charts,
    rendered_dom,
    unlinked,
    vega_graphics,
    visible_text,
    with_appendix,
)
from workflow_copy import copy_workflow, snakemake

GIB = 1024**3
ROWS = [
    row["id"]
    for table in ("llama3.1-405b", "deepseek-v3-671b")
    for row in yaml.safe_load((REPO / f"experiments/rows/{table}.yaml").read_text())["rows"]
]


@pytest.fixture
def finished_copy(main_job, tmp_path):
    """A copy of the finished main job (results and all), for tests that edit files."""
    copy = tmp_path / "wf"
    shutil.copytree(main_job, copy, symlinks=True, ignore=shutil.ignore_patterns("work"))
    return copy


def runs(directory):
    return {p.stem: json.loads(p.read_text()) for p in (directory / "results/cpu/runs").glob("*.json")}


def compiled(directory):
    return {p.stem: json.loads(p.read_text()) for p in (directory / "results/compiled/gb200-nvl72").glob("*.json")}


@pytest.mark.slow
def test_every_row_trains_for_real(main_job):
    results = runs(main_job)
    assert len(results) == 9
    for row, result in results.items():
        assert result["status"] == "ok", (row, result["message"])
        assert result["steps_completed"] == 10 and len(result["losses"]) == 10
        assert result["step_time_s"] > 0 and result["tflops_per_device"] > 0
        assert result["losses"][-1] < result["losses"][0]
        assert result["compiled_memory"]["temp_size_in_bytes"] > 0
        provenance = result["provenance"]
        assert provenance["versions"]["maxtext"] == "0.2.5" and provenance["device_kind"] == "cpu"
        assert (
            f"model_name={'llama3.1-405b' if row.startswith('llama') else 'deepseek3-671b'}"
            in provenance["maxtext_arguments"]
        )
    assert "query_proj=offload" in results["llama-qkv-offload-lhs"]["provenance"]["maxtext_arguments"]
    assert (
        "--xla_gpu_enable_latency_hiding_scheduler=false"
        in results["llama-qkv-offload-nolhs"]["provenance"]["xla_flags"]
    )
    with open(main_job / "results/cpu/table.csv") as handle:
        assert sorted(line["row"] for line in csv.DictReader(handle)) == sorted(results)


@pytest.mark.slow
def test_placement_and_flags_do_not_change_what_is_learned(main_job):
    """Rows of one model and batch differ only in placement and flags: same model, same data."""
    groups = defaultdict(list)
    for result in runs(main_job).values():
        batch = next(a for a in result["provenance"]["maxtext_arguments"] if a.startswith("per_device_batch_size="))
        groups[(result["table"], batch)].append(result["losses"])
    compared = [losses for losses in groups.values() if len(losses) > 1]
    assert len(compared) == 2  # Llama (4 rows) and DeepSeek at micro batch 8 (4 rows)
    for losses in compared:
        first = losses[0]
        for other in losses[1:]:
            assert max(abs(a - b) for a, b in zip(first, other, strict=True)) < 1e-3


@pytest.mark.slow
def test_every_row_compiles_at_full_scale_for_gb200(main_job):
    results = compiled(main_job)
    assert len(results) == 9
    for row, result in results.items():
        assert result["status"] == "ok", (row, result["message"])
        assert result["devices"] == 128 and result["mesh"] == {"fsdp": 128}
    for row in ("llama-qkv-offload-lhs", "llama-qkv-offload-nolhs", "llama-qkv-offload-lhs-pipelined"):
        assert results[row]["host_bytes"] == 126 * 576 * 1024**2  # 70.875 GiB, to the byte
        assert results[row]["hlo"]["host_buffers"] == 3
    assert results["llama-baseline"]["host_bytes"] == 0
    assert results["deepseek-device-mb8"]["fits"] is False
    # under the settings the source's outcomes chose (experiments/outcome-settings.yaml: DeepSeek at
    # sequence length 2048), every row the source ran fits the allocator's share of GB200 (the recipes'
    # 0.94: 173.3 GiB), and the rows they change were compiled under the defaults too
    assert all(results[row]["fits"] for row in results if row != "deepseek-device-mb8")
    assert results["deepseek-remat"]["settings_chosen"] == ["deepseek-sequence-length.seq-2048"]
    assert "settings_chosen" not in results["llama-baseline"]
    defaults = {
        path.stem: json.loads(path.read_text()) for path in (main_job / "results/defaults/compiled").glob("*.json")
    }
    assert sorted(defaults) == sorted(row for row in results if row.startswith("deepseek"))
    # under the defaults, the remat and optimized rows, which the source ran, do not fit
    assert not defaults["deepseek-remat"]["fits"] and not defaults["deepseek-offload-optimized"]["fits"]
    # LHS and pipelining change the compiled program
    digests = {row: results[row]["hlo_sha256"] for row in results if row.startswith("llama-qkv")}
    assert len(set(digests.values())) == 3


@pytest.mark.slow
def test_the_deepseek_rows_the_source_ran_would_not_fit_under_the_recipes_collective_flags(finished_copy):
    """Why the DeepSeek rows keep XLA's collective defaults (assumption deepseek-collective-flags):
    the optimized row ran in 165.2 GiB, while the collective flags the Llama rows take (pipelined
    all-gathers and reduce-scatters) add more than 20 GiB to its program, past what the GPU holds."""
    target = "results/whatif/assumptions/deepseek-collective-flags.recipe-flags/deepseek-offload-optimized.json"
    done = snakemake(finished_copy, "--cores", "2", "--config", "assumptions=True", "--", target)
    assert done.returncode == 0, done.stderr[-3000:]
    default = compiled(finished_copy)["deepseek-offload-optimized"]
    recipe = json.loads((finished_copy / target).read_text())
    assert recipe["status"] == "ok" and recipe["fits"] is False and default["status"] == "ok"
    assert recipe["device_bytes"] - default["device_bytes"] > 20 * GIB


@pytest.mark.slow
def test_every_claim_has_a_verdict_and_the_mechanisms_hold(main_job):
    verdicts = json.loads((main_job / "results/cpu/verdicts.json").read_text())
    claims = yaml.safe_load((main_job / "experiments/claims.yaml").read_text())["claims"]
    assert [c["id"] for c in verdicts["claims"]] == [c["id"] for c in claims]
    assert verdicts["counts"]["error"] == 0
    judged = {
        (claim["id"], j["evidence"]): j
        for claim in verdicts["claims"]
        for j in claim["judgements"]
        if j["evidence"] != "predicted"
    }
    failing = {key for key, j in judged.items() if j["verdict"] == "fail"}
    by_id = {c["id"]: c for c in verdicts["claims"]}
    # under the settings the source's outcomes chose, nothing fails; under the defaults, DeepSeek's
    # dropless programs, widened by the gaps measured between a compile here and a run
    # (experiments/evidence-bands.yaml), lie wholly above the published 145.6 and 165.2 GiB and the
    # optimized row wholly above the limit
    assert verdicts["settings"] == {"chosen": ["deepseek-sequence-length.seq-2048"], "headline": "chosen"}
    assert failing == set()
    under_defaults = {c["id"] for c in verdicts["claims"] if c["under_defaults"]["verdict"] == "fail"}
    assert under_defaults == {"deepseek-plain-gpu-memory", "deepseek-optimized-gpu-memory", "deepseek-offload-fits-mb8"}
    assert verdicts["under_defaults"]["finding_counts"]["fail"] == 3
    # an outcome the choice reproduces is consistent by construction, not an independent pass
    assert by_id["deepseek-device-save-oom-mb8"]["verdict"] == "pass"
    assert by_id["deepseek-device-save-oom-mb8"]["independent"] is False
    # the rows that fit with room as compiled, but whose measured band crosses the limit: not decided
    for claim_id in ("deepseek-offload-fits-mb8", "deepseek-device-save-fits-mb2"):
        over = judged[claim_id, "compiled"]
        assert over["verdict"] == "inconclusive" and over["needs_gib"] < over["limit_gib"]
        assert over["band"]["low"] <= over["limit_gib"] < over["band"]["high"]
        assert "on both sides of the limit" in over["reason"]
    # a compiled memory figure's band is wider than the claim's 5%: it decides no value claim here
    for claim_id in ("deepseek-plain-gpu-memory", "deepseek-optimized-gpu-memory"):
        assert judged[claim_id, "compiled"]["verdict"] == "inconclusive"
    for claim_id in ("llama-qkv-mib-per-layer", "llama-qkv-host-gib"):
        analytic = next(j for j in by_id[claim_id]["judgements"] if j["evidence"] == "analytic")
        assert analytic["verdict"] == "pass"
    for claim_id in ("host-buffers-equal-analytic-offload", "llama-flags-change-the-program"):
        assert by_id[claim_id]["verdict"] == "pass"
    assert by_id["deepseek-flags-change-the-program"]["verdict"] == "pass"
    assert by_id["deepseek-device-save-oom-mb8"]["verdict"] == "pass"
    assert by_id["deepseek-optimized-throughput"]["verdict"] == "not-comparable"


# DeepSeek's 908.2 and what compares it to plain offload (the other DeepSeek throughputs are implied
# by it), and the Llama orderings (the order of its four published throughputs)
NOT_COMPARABLE_BY_PREDICTION = (
    "deepseek-optimized-throughput",
    "deepseek-optimized-vs-plain",
    "deepseek-optimized-faster-than-plain",
    "llama-lhs-without-pipelining-fastest",
    "llama-lhs-off-slowest",
)


@pytest.mark.slow
def test_every_gb200_row_is_predicted_and_every_speed_claim_is_judged_by_it(main_job):
    evidence = json.loads((main_job / "results/cpu/evidence.json").read_text())
    statuses = {
        o["row"]: o["value"]
        for o in evidence["observations"]
        if o["evidence"] == "predicted" and o["metric"] == "status" and o["target"] == "gb200-nvl72"
    }
    # a row is predicted where its program fits the allocator's share of GB200's memory, and is out
    # of memory where it does not (device-save at micro batch 8 among them)
    fits = {row: result["fits"] for row, result in compiled(main_job).items()}
    assert statuses == {row: "ok" if fits[row] else "oom" for row in ROWS}
    assert statuses["deepseek-device-mb8"] == "oom" and statuses["llama-baseline"] == "ok"
    verdicts = json.loads((main_job / "results/cpu/verdicts.json").read_text())
    speed = [c for c in verdicts["claims"] if any(j["evidence"] == "predicted" for j in c["judgements"])]
    assert len(speed) == 12
    # under the settings the source's outcomes chose (DeepSeek at sequence length 2048) no compute rate
    # reaches DeepSeek's published throughput: its transfers alone take longer, so it has no calibration
    calibrated = set(json.loads((main_job / "results/predicted/gb200-nvl72.json").read_text())["calibration"])
    assert calibrated == {"llama"}
    for claim in speed:
        judgement = next(j for j in claim["judgements"] if j["evidence"] == "predicted")
        if judgement["verdict"] == "not-comparable":
            # a row it compares does not fit, so has no step; its model has no calibration; or every
            # other throughput of its model is, or derives from, one of its own published values
            out_of_memory = [row for row in ROWS if not fits[row] and f"{row} ran out of memory" in judgement["reason"]]
            uncalibrated = all(row.startswith("deepseek") for row in claim["subjects"])
            assert out_of_memory or uncalibrated or claim["id"] in NOT_COMPARABLE_BY_PREDICTION, claim["id"]
            assert out_of_memory or uncalibrated or "derives from" in judgement["reason"]
            continue
        if (judgement.get("reason") or "").startswith("unmeasured"):
            assert judgement["verdict"] == "inconclusive" and "band" not in judgement
            continue
        # a verdict no stronger than the model's measured error: a fail needs the whole band outside; a
        # ratio of two placements takes the error on such ratios measured on the chip, in pp
        assert judgement["band"]["error"] > 0
        if claim["id"] == "llama-qkv-lhs-vs-baseline":
            assert (judgement["band"]["error"], judgement["band"]["error_unit"]) == (4.78, "pp")
            assert "placement pairs of llama measured on the chip" in judgement["note"]
        else:
            assert "leave-one-out" in judgement["note"] and judgement["band"]["error_unit"] == "fraction"
        if judgement["verdict"] == "fail" and "low" in judgement["band"]:
            tolerance = judgement["tolerance"]
            allowed = tolerance.get("absolute") or tolerance["relative"] * abs(claim["published"])
            band = judgement["band"]
            assert band["high"] < claim["published"] - allowed or band["low"] > claim["published"] + allowed
    # where the model's ratio has the other sign from the post's, under every calibration outside the pair
    assert {(d["first"], d["second"]) for d in verdicts["sign_disagreements"]} == {
        ("llama-qkv-offload-lhs", "llama-baseline"),
        ("llama-qkv-offload-lhs-pipelined", "llama-qkv-offload-lhs"),
    }
    prediction = json.loads((main_job / "results/predicted/gb200-nvl72.json").read_text())
    assert prediction["model_error"]["pairs"] > 0
    # a step's gradient reduce-scatters move about the bf16 weights: 2 bytes x 405B (Llama 3.1 405B)
    # and x 671B (DeepSeek-V3) parameters, on every row of each model
    weights = {"llama": 2 * 405e9, "deepseek": 2 * 671e9}
    for row in prediction["rows"]:
        if row["status"] == "ok":
            scattered = row["collectives"]["reduce-scatter"]["bytes"]
            assert scattered == pytest.approx(weights[row["family"]], rel=0.01), row["row"]
            # 128 GPUs in two NVLink domains: the FSDP collectives cross the network, charged in the step
            assert row["network"]["bytes_per_nic"]["ring"] > row["network"]["bytes_per_nic"]["floor"] > 0
            # a row no calibration reaches (DeepSeek under the chosen settings) has no terms to break down
            assert row["breakdown"] is None or row["breakdown"]["exposed_network_s"] >= 0
    # the memory chart draws GB200's limit, labelled with the one value the page gives it everywhere
    html = (main_job / "results/report/cpu.html").read_text()
    spec = re.search(r'id="spec-memory">(.*?)</script>', html, re.S).group(1).replace("<\\/", "</")
    limits = {r["limit_text"] for values in json.loads(spec)["datasets"].values() for r in values}
    assert limits == {"limit 173.2 GiB"} and "limit of 173.2 GiB" in html and "173.25" not in html
    page = with_appendix(main_job / "results/report/cpu.html")  # the step-time model's detail: the appendix
    assert "Traffic between NVLink domains, as NCCL moves it" in page and 'id="model-error"' in page
    assert "cannot reach the published speeds" not in page


@pytest.mark.slow
def test_the_profile_guided_programs_are_scheduled_by_the_models_profile(finished_copy):
    """The sensitivity stage compiles a row again with the profile of its default program: XLA says
    it found most of the program's instructions in it, the schedule it makes is another, and a row
    that did not fit still does not. The default run compiles no alternative."""
    name = "xla-latency-estimator.profile-guided"
    assert not (finished_copy / "results/whatif/assumptions").exists()
    # Llama rows: under the settings the source's outcomes chose, no rate calibrates DeepSeek, so the
    # profile costs none of its instructions
    chosen = ["llama-baseline", "llama-qkv-offload-lhs"]
    targets = [f"results/whatif/assumptions/{name}/{row}.json" for row in chosen]
    done = snakemake(finished_copy, "--cores", "2", "--config", "assumptions=True", "--", *targets)
    assert done.returncode == 0, done.stderr[-3000:]
    profile = (finished_copy / "results/profiles/gb200-nvl72.pbtxt").read_text()
    default = compiled(finished_copy)
    for row, path in zip(chosen, targets, strict=True):
        result = json.loads((finished_copy / path).read_text())
        assert result["status"] == "ok", (row, result["message"])
        matched = result["latency_profile"]["matched"]
        assert matched["found"] > 5 * matched["missing"], (row, matched)  # what it misses: dones, no-ops
        assert result["fits"] == default[row]["fits"], row
        assert f"# {row}: " in profile
    guided = json.loads((finished_copy / targets[0]).read_text())
    assert guided["hlo_sha256"] != default[chosen[0]]["hlo_sha256"]


@pytest.mark.slow
def test_results_are_readable_by_others_under_umask_022(main_job):
    written = [
        *(main_job / "results/cpu/runs").glob("*.json"),
        *(main_job / "results/compiled/gb200-nvl72").glob("*.json"),
        main_job / "results/analytic.json",
        main_job / "results/predicted/gb200-nvl72.json",
        main_job / "results/cpu/table.csv",
        main_job / "results/cpu/evidence.json",
        main_job / "results/cpu/verdicts.json",
        # the page of the chip's kept runs (experiments/device-results/tpu-v5e-1/)
        main_job / "results/tpu-v5e-1/evidence.json",
        main_job / "results/tpu-v5e-1/verdicts.json",
        *(main_job / "results/report").glob("*.html"),
    ]
    # 9 runs, 9 compiles, 7 more results, 5 pages: each target's and its appendix, the index
    assert len(written) == 9 + 9 + 7 + 5
    assert {oct(stat.S_IMODE(path.stat().st_mode)) for path in written} == {"0o644"}


@pytest.mark.slow
def test_a_truncated_result_stops_the_workflow_naming_the_file(finished_copy):
    damaged = finished_copy / "results/cpu/runs/llama-baseline.json"
    damaged.write_text(damaged.read_text()[:500])
    done = snakemake(finished_copy, "--cores", "1")
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "error: results/cpu/runs/llama-baseline.json: not valid JSON" in output
    # whichever reader met it first (collect_runs or evidence_table) kept the message in its log
    logs = [log.read_text() for log in (finished_copy / "results/cpu/logs").glob("*.log")]
    assert any("llama-baseline.json: not valid JSON" in log and "truncated (500 bytes)" in log for log in logs)


# What reads each rule's results in the default DAG: an edit replans a rule, then these.
READERS = {
    "run_row": {"collect_runs", "evidence_table", "evidence_defaults"},
    # a row the chosen settings do not change is its own under the defaults too
    "compile_row": {"predict", "evidence_table", "pair_errors", "predict_defaults", "evidence_defaults"},
    "compile_defaults": {"predict_defaults", "evidence_defaults"},
    "analytic": {"evidence_table"},
    "analytic_defaults": {"evidence_defaults"},
    # the chip's prediction carries GB200's calibration; the pairs set it beside the published ratios
    "predict": {"evidence_table", "predict_device", "pair_errors"},
    "predict_defaults": {"evidence_defaults"},
    "predict_device": {"evidence_table"},
    "pair_errors": {"check_claims", "report"},
    "collect_runs": set(),
    "evidence_table": {"check_claims", "report"},
    "evidence_defaults": {"check_claims"},
    "check_claims": {"report"},
    "report": {"index"},
    "index": set(),
}


def replanned(rules: set[str]) -> set[str]:
    """`rules` and everything downstream of them in the default DAG."""
    found, todo = set(), [rule for rule in rules if rule in READERS]
    while todo:
        rule = todo.pop()
        if rule not in found:
            found.add(rule)
            todo.extend(READERS[rule])
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    "edited",
    [
        "workflow/offload_repro/produce/measured/launch.py",  # how a row is launched: the runs, never a compile
        "workflow/offload_repro/core/memory_analysis.py",  # read back from every program: runs and compiles
        "workflow/offload_repro/core/checkout_copy.py",  # a helper of the tests and the benchmark: no rule
        "workflow/offload_repro/core/process.py",  # starts every CPU row and compile
        "experiments/tensors.yaml",  # the offload a compile is expected to make: judged, not compiled
        "workflow/offload_repro/produce/compiled/compiled_row.py",
        "workflow/offload_repro/produce/measured/runner.py",
        "experiments/speed.yaml",  # read by the predictions
        "workflow/offload_repro/judge/verdicts.py",
        "workflow/offload_repro/present/charts.py",
        "report/style.css",
        "envs/requirements.lock",
    ],
)
def test_an_edit_replans_exactly_the_stages_that_import_or_read_it(finished_copy, edited):
    """Expected from the derived graph (offload_repro.plan), observed in Snakemake's own plan."""
    expected = replanned(set(plan.rebuilt_by().get(edited, [])))  # a file no rule reads: nothing
    # Snakemake skips inputs whose content is unchanged, so the edit changes content (a comment).
    comment = {".j2": "{# edited #}", ".css": "/* edited */"}.get((finished_copy / edited).suffix, "# edited")
    with open(finished_copy / edited, "a") as handle:
        handle.write(f"\n{comment}\n")
    assert planned_rules(finished_copy) == expected


def planned_rules(directory: Path) -> set[str]:
    """The rules a dry run of `directory` would run."""
    done = snakemake(directory, "-n", "--quiet", "rules")
    assert done.returncode == 0, done.stderr[-2000:]
    return set(re.findall(r"^(\w+)\s+\d+$", done.stdout + done.stderr, re.M)) - {"all", "total", "job"}


def edit_help_text(directory: Path, command: str) -> str:
    """Reword the help text of one command (its module's docstring) in the workflow `directory`,
    the file's time later than every result's; the edited file, as the plan names it."""
    edited = f"workflow/offload_repro/commands/{command}.py"
    source = (directory / edited).read_text()
    help_text = source.split('"""')[1].split("\n")[0]
    (directory / edited).write_text(source.replace(help_text, help_text.removesuffix(".") + " (reworded).", 1))
    later = time.time() + 60
    os.utime(directory / edited, (later, later))
    return edited


@pytest.fixture(scope="module")
def faked_finish(tmp_path_factory):
    """A workflow copy whose main job looks finished: every output of the plan exists, at least as
    new as every input (empty: a dry run reads none of them)."""
    directory = copy_workflow(tmp_path_factory.mktemp("faked"))
    done = snakemake(directory, "-n", "--summary")
    assert done.returncode == 0, done.stderr[-2000:]
    outputs = [line.split("\t")[0] for line in done.stdout.splitlines()[1:] if line.strip()]
    assert "results/cpu/verdicts.json" in outputs and len(outputs) > 20
    now = time.time()
    for output in outputs:
        (directory / output).parent.mkdir(parents=True, exist_ok=True)
        (directory / output).touch()
        os.utime(directory / output, (now, now))
    assert planned_rules(directory) == set()
    return directory


@pytest.mark.parametrize(("command", "rules"), [("collect", {"collect_runs"}), ("report", {"report", "index"})])
def test_a_command_help_text_edit_replans_that_stage_alone(faked_finish, tmp_path, command, rules):
    """A help text lives in its command's module: rewording it replans the rule that runs that
    command, then the rules that read its result, and no other."""
    copy = tmp_path / "wf"
    shutil.copytree(faked_finish, copy, symlinks=True)
    edited = edit_help_text(copy, command)
    assert planned_rules(copy) == rules == replanned(set(plan.rebuilt_by()[edited]))


@pytest.mark.slow
def test_a_command_help_text_edit_replans_that_stage_on_a_finished_main_job(finished_copy):
    """The same on the real main job: predict's help reworded replans the prediction and its readers."""
    edit_help_text(finished_copy, "predict")
    # the prediction under the defaults runs the same command
    expected = replanned({"predict", "predict_defaults"})
    assert expected >= {"predict_device", "pair_errors", "evidence_defaults", "check_claims", "report", "index"}
    assert planned_rules(finished_copy) == expected


@pytest.mark.slow
def test_a_data_input_edit_replans_its_readers(finished_copy):
    with open(finished_copy / "experiments/claims.yaml", "a") as handle:
        handle.write("\n# edited\n")
    # the claims are also the prediction's data input: a published speedup implies a throughput
    assert planned_rules(finished_copy) == replanned(
        {"predict", "predict_defaults", "pair_errors", "evidence_table", "check_claims"}
    )


@pytest.mark.slow
def test_second_invocation_has_nothing_to_do(main_job):
    done = snakemake(main_job, "-n")
    assert done.returncode == 0 and "Nothing to be done" in done.stdout + done.stderr


def test_a_moved_workflow_under_another_interpreter_path_reruns_nothing(tmp_path):
    """Where the checkout and the interpreter lie is no part of what a job computes: a finished job,
    its workflow moved and Snakemake started through another path to the same environment, has
    nothing to do. The interpreter's path reaches the command line through a parameter computed
    from `input`, out of the params rerun trigger, and no shell string names it, so the code rerun
    trigger (a shell's text) does not see it either. Here on the quickest rule, analytic."""
    (tmp_path / "first").mkdir()
    first = copy_workflow(tmp_path / "first")
    done = snakemake(first, "--cores", "1", "results/analytic.json")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    moved = tmp_path / "moved"
    shutil.copytree(first, moved, symlinks=True)
    (tmp_path / "venv").symlink_to(sys.prefix, target_is_directory=True)
    python = str(tmp_path / "venv" / "bin" / Path(sys.executable).name)
    done = snakemake(moved, "-n", "-p", "--forceall", "results/analytic.json", python=python)
    assert done.returncode == 0 and f"{python} -m offload_repro.cli analytic" in done.stdout + done.stderr
    done = snakemake(moved, "-n", "results/analytic.json", python=python)
    assert done.returncode == 0 and "Nothing to be done" in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.slow
def test_the_main_job_ends_with_the_verdict_counts_and_the_report(main_job):
    output = (main_job / "main-job.out").read_text()
    verdicts = json.loads((main_job / "results/cpu/verdicts.json").read_text())
    counts = ", ".join(f"{n} {verdict}" for verdict, n in verdicts["finding_counts"].items())
    # the source's findings are counted (a claim that is arithmetic on another's is part of its finding);
    # this reproduction's own checks apart
    claimed = [claim for claim in verdicts["claims"] if claim["kind"] != "check"]
    checks = len(verdicts["claims"]) - len(claimed)
    findings = len(verdicts["findings"])
    assert (
        f"offload-repro: cpu: {counts} (of {findings} findings, the source's {len(claimed)} claims); its own checks: "
        in output
    )
    assert f"pass (of {checks})" in output and checks == 3
    assert "offload-repro: report: results/report/index.html" in output
    # the README's sample is these lines, generated (python -m offload_repro.plan --write-sample)
    sample = plan_sample.sample_block(main_job / "results")
    assert sample.strip("`\n") in output
    readme = (REPO / "README.md").read_text()
    assert plan.with_generated(readme, plan_sample.SAMPLE, sample) == readme, (
        "run the main job, then: PYTHONPATH=workflow python -m offload_repro.plan --write-sample"
    )


@pytest.mark.slow
def test_the_entry_page_links_every_target(main_job):
    index = (main_job / "results/report/index.html").read_text()
    assert 'href="cpu.html"' in index
    assert 'href="tpu-v5e-1.html"' in index  # built from the chip's kept runs, with no TPU here
    assert 'id="target-cpu" data-stale="false"' in index


@pytest.mark.slow
@pytest.mark.browser
def test_report_renders_every_chart_and_verdict(main_job):
    require("chromium")
    page = main_job / "results/report/cpu.html"
    assert page.stat().st_size < 2 * 1024**2
    appendix = page.with_name("cpu-appendix.html")
    assert appendix.stat().st_size < 2 * 1024**2
    dom = rendered_dom(page)
    # the page draws what the claims are weighed by; the appendix the diagnostics
    assert rendered_charts(dom) == {"memory": "true", "ratios": "true"}
    assert rendered_charts(rendered_dom(appendix)) == {
        "predicted": "true",
        "throughput": "true",
        "step-terms": "true",
        "activations": "true",
        "losses": "true",
        "offload-cost": "true",
    }
    assert vega_graphics(dom) >= 2
    verdicts = json.loads((main_job / "results/cpu/verdicts.json").read_text())
    for claim in verdicts["claims"]:
        assert f'id="claim-{claim["id"]}" data-verdict="{claim["verdict"]}"' in dom
    # On a 1280-pixel screen the verdicts are read without scrolling sideways, and no table
    # widens the page (a wide one scrolls inside its own section).
    widths = layout_widths(page, 1280)
    assert widths["claims"] <= widths["screen"] and widths["unframed"] <= widths["screen"], widths


@pytest.mark.slow
@pytest.mark.browser
def test_the_main_page_reads_in_five_screens_summary_first(main_job):
    """At 1,400 px wide the main page is at most 6,000 px tall with no paragraph over 120 words; a
    summary comes before the verdict table; no value a prediction decided sits under a column headed
    "observed"; and no two tick labels of one chart axis overlap."""
    require("chromium")
    reading = reading_metrics(main_job / "results/report/cpu.html", width=1400)
    assert reading["charts_drawn"] == reading["charts"], reading
    assert reading["predicted_under_observed"] == [], reading
    assert reading["overlapping_ticks"] == [], reading
    assert reading["summary_top"] is not None and reading["summary_top"] < reading["verdicts_top"], reading
    assert reading["longest_paragraph"] <= 120, reading
    assert reading["height"] <= 6000, reading


PAGES = ("index", "cpu", "cpu-appendix", "tpu-v5e-1", "tpu-v5e-1-appendix")


@pytest.mark.slow
@pytest.mark.browser
def test_every_number_shown_twice_on_the_pages_is_one_value(main_job):
    """Every page of a fresh main job, as Chromium renders it: the counts of findings on the index,
    a page's headline and its first screen; GB200's limit; each compiled memory figure; and each
    claim's tolerance, wherever they appear, each one value with one rounding."""
    require("chromium")
    dom = {name: rendered_dom(main_job / f"results/report/{name}.html") for name in PAGES}
    text = {name: " ".join(visible_text(page).split()) for name, page in dom.items()}
    for target in ("cpu", "tpu-v5e-1"):
        verdicts = json.loads((main_job / f"results/{target}/verdicts.json").read_text())
        counts = list(verdicts["finding_counts"].values())
        line = re.search(rf'<tr id="target-{target}".*?</tr>', dom["index"], re.S).group(0)
        assert [int(n) for n in re.findall(r'v-[a-z-]+">(\d+)<', line)] == counts, target
        headline = re.search(r'id="finding-counts">(.*?)</span></h2>', dom[target], re.S).group(1)
        assert [int(n) for n in re.findall(r'v-[a-z-]+">(\d+) ', headline)] == counts, target
        findings = len(verdicts["findings"])
        assert f"Held: {counts[0]} of the post's {findings} findings" in text[target], target
    # GB200's limit: one value, one rounding, on the page, its appendix and its charts' labels
    limit = next(iter(compiled(main_job).values()))["allocator_limit_bytes"] / 2**30
    shown = {
        found
        for name in ("cpu", "cpu-appendix")
        for found in re.findall(r"limit (?:of )?([\d.]+) GiB|of each GPU \(([\d.]+) GiB\)", text[name])
    }
    assert {value for pair in shown for value in pair if value} == {fmt(limit)}
    # each compiled figure as the row table writes it, and no other rounding of it anywhere
    for row, result in compiled(main_job).items():
        gib = result["device_bytes"] / 2**30
        assert fmt(gib) in visible_text(re.search(rf'<tr id="row-{row}".*?</tr>', dom["cpu"], re.S).group(0)), row
        for other in {f"{gib:.2f}", f"{gib:.3f}"} - {fmt(gib)}:
            assert all(other not in page for page in text.values()), (row, other)
    # each claim's one tolerance: the same in its line of every page and in each judgement that states one
    for claim in yaml.safe_load((main_job / "experiments/claims.yaml").read_text())["claims"]:
        if "tolerance" not in claim:
            continue
        written = set()
        for name in ("cpu", "tpu-v5e-1"):
            line = re.search(rf'<tr id="claim-{claim["id"]}".*?</tr>', dom[name], re.S).group(0)
            line = unlinked(line)
            written |= set(re.findall(r'<span class="tol"[^>]*>([^<]+)</span>', line))
            written |= set(re.findall(r"; tolerance (±[^(]+?) \(", " ".join(visible_text(line).split())))
        assert len(written) == 1, (claim["id"], written)


@pytest.mark.slow
@pytest.mark.browser
def test_no_label_overlaps_or_is_cut_and_no_table_scrolls_at_1400_px(main_job):
    """Every page of the main job and its appendix, at 1,400 px: no two labels of a chart overlap,
    none reaches past its chart or is cut short, every quantity axis has a title, and every table
    fits its frame."""
    require("chromium")
    for name in ("cpu", "cpu-appendix", "tpu-v5e-1", "tpu-v5e-1-appendix"):
        found = label_problems(main_job / f"results/report/{name}.html", width=1400)
        assert found == {key: [] for key in found}, (name, found)


def test_malformed_table_fails_before_anything_runs(tmp_path):
    directory = copy_workflow(tmp_path)
    table = directory / "experiments/rows/deepseek-v3-671b.yaml"
    data = yaml.safe_load(table.read_text())
    data["rows"][4]["published"]["outcome"] = "maybe"
    table.write_text(yaml.safe_dump(data))
    done = snakemake(directory, "-n")
    assert done.returncode != 0
    expected = "experiments/rows/deepseek-v3-671b.yaml: row 5 (id 'deepseek-device-mb8'), field 'published.outcome'"
    assert expected in done.stdout + done.stderr
    assert not (directory / "results").exists()


def test_unknown_row_in_config_is_refused(tmp_path):
    done = snakemake(copy_workflow(tmp_path), "-n", "--config", 'rows=["llama-nope"]')
    assert done.returncode != 0 and "unknown row ids ['llama-nope']" in done.stdout + done.stderr


# Two rows that differ only in XLA flags (the latency-hiding scheduler off in the second).
FLAG_PAIR = ("llama-qkv-offload-lhs", "llama-qkv-offload-nolhs")


@pytest.mark.slow
def test_a_compile_forked_from_the_warm_server_is_the_cold_compile_byte_for_byte(tables, tmp_path):
    """The DAG forks each compile from a server that imported MaxText once (core/warm_start.py). Each
    fork must read its own XLA flags: two rows that differ only in them compile to two programs, each
    the very program a cold process compiles, with the same memory analysis."""
    gb200 = load_target("gb200-nvl72")
    rows = {row.id: row for row in load_rows(tables) if row.id in FLAG_PAIR}

    def compiled_by(launcher, row_id):
        again = compile_program(rows[row_id], gb200, tmp_path / launcher.__name__ / row_id, "k", launcher=launcher)
        assert again["status"] == "ok", again["message"]
        return again["stats"]

    warm = {row_id: compiled_by(warm_start.run_warm, row_id) for row_id in FLAG_PAIR}
    key = warm_start.server_key(sys.executable, package_environment({"JAX_PLATFORMS": "cpu"}), warm_start.PRELOAD)
    assert (warm_start.runtime_dir() / f"{key}.sock").exists(), "no warm server served the compiles"
    cold = {row_id: compiled_by(run_subprocess, row_id) for row_id in FLAG_PAIR}
    assert warm[FLAG_PAIR[0]]["hlo_sha256"] != warm[FLAG_PAIR[1]]["hlo_sha256"]
    for row_id in FLAG_PAIR:
        assert warm[row_id]["hlo_sha256"] == cold[row_id]["hlo_sha256"], row_id
        assert warm[row_id]["memory"] == cold[row_id]["memory"], row_id


# An offload row of each model (the OOM row and the rest: workflow/scripts/identity.py autotune)
AUTOTUNE_ROWS = ("llama-qkv-offload-lhs", "deepseek-offload-optimized")


@pytest.mark.slow
def test_compile_only_options_leave_the_memory_analysis_identical(main_job, tables, tmp_path):
    """The main job compiles with --xla_gpu_autotune_level=0 and LLVM's kernel optimisation off, and
    assembles no machine code (the ptxas stand-in). XLA's defaults with the real ptxas must give the
    same memory analysis, byte for byte (the program digest may differ). Here on an offload row of each model;
    workflow/scripts/identity.py (autotune, machine-code) compiles all nine each way."""
    gb200 = load_target("gb200-nvl72")

    def compile_again(row):  # as XLA compiles by default: no program cache
        work = tmp_path / "autotuned" / row.id
        again = compile_program(row, gb200, work, "k", compile_only_flags=DEFAULT_AUTOTUNING, machine_code=True)
        flags = again["provenance"]["xla_flags"]
        stats = again["stats"] or {}
        return {"row": row.id, "status": again["status"], "message": again["message"], **stats, "flags": flags}

    chosen = [row for row in load_rows(tables) if row.id in AUTOTUNE_ROWS]
    with ThreadPoolExecutor(max_workers=2) as pool:
        defaults = {result["row"]: result for result in pool.map(compile_again, chosen)}
    fast = compiled(main_job)
    assert set(defaults) == set(AUTOTUNE_ROWS) and len(fast) == 9
    # a row the settings chosen by the source's outcomes change is set beside its compile under the defaults
    for path in (main_job / "results/defaults/compiled").glob("*.json"):
        fast[path.stem] = json.loads(path.read_text())
    for row, result in defaults.items():
        assert result["status"] == "ok", (row, result["message"])
        for compile_only in ("--xla_gpu_autotune_level=0", "--xla_gpu_cuda_data_dir="):
            assert compile_only in fast[row]["provenance"]["xla_flags"]
            assert compile_only not in result["flags"]
        assert result["memory"] == fast[row]["memory"], row
        assert result["hlo"]["host_buffer_bytes"] == fast[row]["hlo"]["host_buffer_bytes"], row
