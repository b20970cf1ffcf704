"""Every evidence adapter on small real result files (tests/fixtures/results): what each observes."""

from __future__ import annotations

import json

import pytest

from conftest import COMPILED, FIXTURES, RESULTS
from offload_repro.core.failure import failure_of
from offload_repro.core.results import ResultError
from offload_repro.judge.evidence_table import build, observe_files
from offload_repro.present.lookup import frame

RUN = RESULTS / "cpu/runs/llama-qkv-offload-lhs.json"
RUN_RESULT = json.loads(RUN.read_text())
PROBE = RESULTS / "h200-1/probe.json"
AS_RUN = RESULTS / "compiled/as-run/llama-baseline.json"  # planned within the memory a run gives XLA


def observed(*paths):
    observations, sources, _ = observe_files(list(paths))
    table = {(o.row, o.evidence, o.metric, o.at): o for o in observations}
    return table, sources


@pytest.fixture(scope="module")
def compiles() -> dict:
    """The observations of every compile fixture (one row each), by (row, evidence, metric, at)."""
    return observed(*COMPILED, AS_RUN)[0]


def test_a_run_gives_its_status_throughput_and_every_steps_loss():
    table, sources = observed(RUN)
    run = RUN_RESULT
    key = ("llama-qkv-offload-lhs", "measured")
    assert table[(*key, "status", None)].value == "ok" and table[(*key, "outcome", None)].value == "fits"
    assert table[(*key, "tflops_per_device", None)].value == run["tflops_per_device"]
    assert table[(*key, "tflops_per_device", None)].unit == "TFLOPs/s/device"
    assert [table[(*key, "loss", step)].value for step in range(10)] == run["losses"]
    assert table[(*key, "final_loss", None)].value == run["losses"][-1]
    assert all(o.source == str(RUN) and o.target == "cpu" for o in table.values())
    assert sources[0]["kind"] == "run" and sources[0]["provenance"]["xla_flags"] == run["provenance"]["xla_flags"]


def test_a_failed_run_is_an_observation_with_its_cause(tmp_path):
    log = FIXTURES / "failures/exception.train.log"  # a real MaxText failure
    cause = failure_of(1, log.read_text(), "train.log")
    run = RUN_RESULT | dict(status="error", message=cause.cause, tflops_per_device=None, step_time_s=None, losses=[])
    path = tmp_path / "run.json"
    path.write_text(json.dumps({k: v for k, v in run.items() if v is not None} | {"failure": cause.record()}))
    table, sources = observed(path)
    status = table[("llama-qkv-offload-lhs", "measured", "status", None)]
    assert (status.value, status.status, status.message) == ("error", "error", cause.cause)
    assert status.message.startswith("AssertionError: Number of devices per slice 1 does not match")
    assert ("llama-qkv-offload-lhs", "measured", "outcome", None) not in table
    assert sources[0]["failure"] == cause.record()  # its exit status and log, for the page


def test_a_compile_gives_memory_fit_mechanism_and_program(compiles):
    key = ("llama-qkv-offload-lhs", "compiled")
    assert compiles[(*key, "outcome", None)].value == "fits"
    assert compiles[(*key, "host_gib", None)].value == 70.875  # 126 x 576 MiB, to the byte
    assert compiles[(*key, "host_buffer_gib", None)].value == compiles[(*key, "expected_host_buffer_gib", None)].value
    assert compiles[(*key, "host_buffers", None)].value == 3
    assert len(compiles[(*key, "hlo_sha256", None)].value) == 64
    assert compiles[(*key, "capacity_gib", None)].value == pytest.approx(184.3, abs=0.05)
    # one that does not fit is an outcome, with a negative margin
    assert compiles[("deepseek-device-mb8", "compiled", "outcome", None)].value == "oom"
    assert compiles[("deepseek-device-mb8", "compiled", "margin_gib", None)].value < 0


def test_a_compile_says_within_what_memory_xla_planned_it(compiles):
    """A compile since the programs are planned as a run's allocator gives XLA memory: its share and
    the memory it makes (GB200's 184.3 GiB at the target's runs' 0.92); older compiles say nothing."""
    key = ("llama-baseline", "compiled")
    assert compiles[(*key, "allocator_share", None)].value == 0.92
    assert compiles[(*key, "allocator_limit_gib", None)].value == pytest.approx(0.92 * 184.31, abs=0.01)
    assert ("llama-qkv-offload-lhs", "compiled", "allocator_share", None) not in compiles


def test_xla_warnings_arrive_with_their_meaning(compiles):
    warnings = [o for o in compiles.values() if o.metric == "xla_memory_warning" and o.row == "deepseek-offload-plain"]
    assert warnings and all(o.message for o in warnings)
    assert any("counts the 144.88 GiB about to be offloaded as device memory" in o.message for o in warnings)


def test_the_analytic_accounting_of_every_row():
    table, _ = observed(RESULTS / "analytic.json")
    key = ("llama-qkv-offload-lhs", "analytic")
    assert table[(*key, "offloaded_mib_per_layer", None)].value == 576
    assert table[(*key, "query_proj_mib_per_layer", None)].value == 512
    assert table[(*key, "offloaded_gib", None)].value == 70.875
    assert table[(*key, "offloaded_gib", None)].target is None  # analytic holds on any hardware
    assert len({o.row for o in table.values()}) == 9


def test_the_probe_is_a_series_over_transfer_sizes():
    table, _ = observed(PROBE)
    probe = json.loads(PROBE.read_text())
    for transfer in probe["transfers"]:
        assert table[(None, "measured", "d2h_gb_s", transfer["bytes"])].value == transfer["d2h_gb_s"]
        assert table[(None, "measured", "h2d_of_limit", transfer["bytes"])].unit == "fraction"
    assert table[(None, "measured", "link_limit_gb_s", None)].value == 64.0


def test_the_table_is_one_typed_file_and_not_itself_evidence(tmp_path):
    paths = [RUN, *COMPILED, RESULTS / "analytic.json", PROBE]
    evidence = build(paths, "cpu", tmp_path / "evidence.json")
    assert {source["kind"] for source in evidence["sources"]} == {"run", "compile", "analytic", "probe"}
    columns = frame(evidence)
    fields = "row target evidence metric value unit status source at message low high n policy"
    assert list(columns.columns) == fields.split()
    assert set(columns["evidence"]) == {"measured", "compiled", "analytic"}
    again, sources, _ = observe_files([tmp_path / "evidence.json"])  # tables and verdicts are not evidence
    assert again == [] and sources == []


def test_a_damaged_file_stops_the_table_naming_it(tmp_path):
    damaged = tmp_path / "llama-baseline.json"
    damaged.write_text(RUN.read_text()[:500])
    with pytest.raises(ResultError, match=r"llama-baseline\.json: not valid JSON"):
        observe_files([RUN, damaged])
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(RUN_RESULT | {"status": "finished"}))
    with pytest.raises(ResultError, match=r"wrong\.json: field 'status': 'finished' is not one of"):
        observe_files([wrong])
