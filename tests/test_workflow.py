"""The main job end to end, for real, on a private copy of the workflow (slow: minutes).

One `snakemake --cores 2` builds everything the default target builds: 9 MaxText training
runs on the CPU, 9 full-scale compiles for GB200, verdicts and the report. The tests below
read what it left behind.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import pytest
import yaml

from conftest import require
from report_page import rendered_charts, rendered_dom, vega_graphics
from workflow_copy import copy_workflow, snakemake

GIB = 1024**3


@pytest.fixture(scope="session")
def main_job(tmp_path_factory):
    directory = copy_workflow(tmp_path_factory.mktemp("wf"))
    done = snakemake(directory, "--cores", "2", timeout=2400)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return directory


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
        assert results[row]["mechanism"]["host_buffers"] == 3
    assert results["llama-baseline"]["host_bytes"] == 0
    assert results["deepseek-device-mb8"]["fits"] is False
    assert results["deepseek-device-mb2"]["fits"] is True
    # LHS and pipelining change the compiled program
    digests = {row: results[row]["hlo_sha256"] for row in results if row.startswith("llama-qkv")}
    assert len(set(digests.values())) == 3


@pytest.mark.slow
def test_every_claim_has_a_verdict_and_llama_accounting_passes(main_job):
    verdicts = json.loads((main_job / "results/cpu/verdicts.json").read_text())
    claims = yaml.safe_load((main_job / "experiments/claims.yaml").read_text())["claims"]
    assert [c["id"] for c in verdicts["claims"]] == [c["id"] for c in claims]
    by_id = {c["id"]: c for c in verdicts["claims"]}
    for claim_id in ("llama-qkv-mib-per-layer", "llama-qkv-host-gib"):
        analytic = next(j for j in by_id[claim_id]["judgements"] if j["evidence"] == "analytic")
        assert analytic["verdict"] == "pass"
    assert by_id["deepseek-device-save-oom-mb8"]["verdict"] == "pass"
    assert by_id["deepseek-optimized-throughput"]["verdict"] == "not-comparable"


@pytest.mark.slow
def test_second_invocation_has_nothing_to_do(main_job):
    done = snakemake(main_job, "-n")
    assert done.returncode == 0 and "Nothing to be done" in done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.browser
def test_report_renders_every_chart_and_verdict(main_job):
    require("chromium")
    page = main_job / "results/report/index.html"
    assert page.stat().st_size < 2 * 1024**2
    dom = rendered_dom(page)
    assert set(rendered_charts(dom).values()) == {"true"} and len(rendered_charts(dom)) == 3
    assert vega_graphics(dom) >= 3
    verdicts = json.loads((main_job / "results/cpu/verdicts.json").read_text())
    for claim in verdicts["claims"]:
        assert f'id="claim-{claim["id"]}" data-verdict="{claim["verdict"]}"' in dom


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
