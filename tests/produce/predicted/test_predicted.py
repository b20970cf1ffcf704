"""Predicted evidence: FLOPs counted from a compiled program, a target's rates, the step-time model,
and a judge that never lets a prediction use the published number of a row it judges."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import textwrap
from pathlib import Path

import pytest

from conftest import CLAIMS, COMPILED, FIXTURES, PREDICTED, REPO, RESULTS, TABLES, run_python
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.published import load_speed, published_throughputs
from offload_repro.core.results import read_result, write_result
from offload_repro.judge import prediction_verdicts as judged_by_prediction
from offload_repro.judge.evidence_views import views
from offload_repro.judge.observers import predicted_observations
from offload_repro.judge.prediction_verdicts import Predicted
from offload_repro.judge.robustness import robustness, uncalibrated, varied_verdicts
from offload_repro.judge.verdicts import check_claims, judge_one
from offload_repro.produce.compiled import hlo_text
from offload_repro.produce.compiled.program_cache import COMPILE_ONLY_FLAGS
from offload_repro.produce.predicted import (
    collective_traffic,
    hlo_flops,
    hlo_schedule,
    leave_one_out,
    memory_traffic,
    prediction,
    step_model,
    step_traffic,
    target_rates,
    xla_clones,
)
from offload_repro.produce.predicted.hlo_flops import Flops
from offload_repro.produce.predicted.hlo_schedule import Event
from report_page import build_report, raw_placeholders, rendered_page, visible_text, with_appendix

SPEED = load_speed(REPO / "experiments/speed.yaml")
GB200 = load_target("gb200-nvl72")
CENTRAL = target_rates.settings(SPEED)[0]  # every link at the central level of its efficiency
WHATIF = ("gb300-nvl72", "vr-nvl144")  # GPU targets nobody has published a run on
ROWS = {row.id: row for row in load_rows(TABLES)}


def traffic(computations: dict, network: hlo_schedule.Network = None) -> dict:
    """What a program moves per step, read from its schedule."""
    return step_traffic.transfers(computations, hlo_schedule.schedule(computations, network))


SCAN_PROGRAM = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp, numpy as np
    from jax.experimental.topologies import get_topology_desc
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    gpus = get_topology_desc(platform="cuda", topology="1x1x1", target_config=open(sys.argv[1]).read())
    replicated = NamedSharding(Mesh(np.array(gpus.devices).reshape(1), ("x",)), PartitionSpec())
    x = jax.ShapeDtypeStruct((64, 256), jnp.bfloat16, sharding=replicated)
    w = jax.ShapeDtypeStruct((33, 256, 256), jnp.bfloat16, sharding=replicated)

    def step(x, w):
        def layer(carry, weight):
            return jnp.tanh(carry @ weight), None
        y, _ = jax.lax.scan(layer, x, w)
        return y @ w[0]

    compiled = jax.jit(step, in_shardings=(replicated, replicated), out_shardings=replicated).lower(x, w).compile()
    open(sys.argv[2], "w").write(compiled.as_text())
    """
)


def test_flops_of_a_compiled_scan_are_the_hand_count_with_its_trip_count(tmp_path):
    """33 layers of a [64,256] x [256,256] matmul in a scan, then one more outside it, compiled for
    GB200 with no GPU: XLA's own cost analysis would count the loop body once."""
    hlo, description = tmp_path / "scan.hlo", REPO / "envs/gpu-targets/NVIDIA_GB200.txtpb"
    done = run_python(SCAN_PROGRAM, str(description), str(hlo), env={"XLA_FLAGS": " ".join(COMPILE_ONLY_FLAGS)})
    assert done.returncode == 0, done.stderr[-3000:]
    computations = hlo_text.parse(hlo.read_text())
    flops, unknown = hlo_flops.count_flops(computations)
    one_matmul = 2 * 64 * 256 * 256
    assert unknown == []
    assert flops.total == flops.gemm == (33 + 1) * one_matmul
    loops = [i for c in computations.values() for i in c.instructions if i.op == "while"]
    assert [hlo_text.trip_count(loop) for loop in loops] == [33]


# A scheduled program by hand: an async copy to the host around a GEMM, and an all-gather.
HOST_COPIES = hlo_text.parse((FIXTURES / "host_copies.hlo").read_text())


def test_host_copies_collectives_and_what_a_copy_spans_are_read_from_the_schedule():
    moved = traffic(HOST_COPIES)
    assert moved["host_bytes"] == {"to_host": 2 * 1024, "from_host": 0}  # the update, not the host buffer
    (copy,) = moved["host_copies"]  # the wrapped dynamic-update-slice is the copy itself, not a second one
    assert copy["asynchronous"] and copy["direction"] == "to_host"
    assert copy["flops_between"] == 2 * 1024**3  # the GEMM scheduled between its start and done
    # an all-gather over 8 devices: its buffer is the 2 MiB result, of which each link carries 7/8
    assert moved["collectives"] == {
        "all-gather": {
            "count": 1,
            "bytes": 2 * 1024 * 1024,
            "bus_bytes": 2 * 1024 * 1024 * 7 // 8,
            "network_ring_bytes": 0,
            "network_floor_bytes": 0,
            "synchronous": 0,
            "synchronous_bytes": 0,
            "groups": [8],
        }
    }
    flops, _ = hlo_flops.count_flops(HOST_COPIES)
    assert flops.rematted == flops.total == 2 * 1024**3


def test_the_traffic_between_nvlink_domains_is_a_ring_and_a_hierarchical_floor():
    """8 devices, 4 per domain, gathering a 2 MiB buffer: a ring's crossing carries the bus bytes
    (7/8 of it) over the NICs of the smaller side (4 of them here, fewer channels than 16); the
    floor sends only the other domain's half, over the 4 NICs that receive it."""
    buffer = 2 * 1024 * 1024

    def crossing(network: hlo_schedule.Network) -> tuple[int, int]:
        """(ring, floor) bytes per NIC on `network`."""
        gathered = traffic(HOST_COPIES, network)["collectives"]["all-gather"]
        return gathered["network_ring_bytes"], gathered["network_floor_bytes"]

    assert crossing((4, 16, 1)) == (int(buffer * 7 / 8 / 4), int(buffer * 4 / 8 / 4))
    assert crossing((4, 2, 1))[0] == int(buffer * 7 / 8 / 2)  # two channels
    assert crossing((8, 16, 1))[0] == 0  # one domain
    # two NICs per GPU: the floor's share spreads over twice the NICs, and so does a ring's when
    # its channels outnumber the smaller side's GPUs
    assert crossing((4, 16, 2)) == (int(buffer * 7 / 8 / 8), int(buffer * 4 / 8 / 8))
    # an all-to-all sends each member's outside share through its own NIC, at both ends
    exchange = collective_traffic.collective("all-to-all-start", ["bf16[1024,1024]"], "replica_groups=[1,8]<=[8]", 4)
    assert exchange.network_ring_bytes == exchange.network_floor_bytes == buffer / 2
    # the three forms XLA prints: a mesh and its spanned axes, an iota transposed, groups listed
    mesh = collective_traffic.replica_groups("replica_groups=mesh['a'=2,'b'=4] {'a'}, dimensions={0}")
    assert mesh == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert collective_traffic.replica_groups("replica_groups=[4,2]<=[2,4]T(1,0), x") == mesh
    assert collective_traffic.replica_groups("replica_groups={{0,1},{2,3}}, x") == [[0, 1], [2, 3]]


# Collectives copied from the compiled GB200 programs (tests/fixtures/README.md): each with the
# instructions that define its operands, in its layer scan (126 layers), under the while loop that
# runs it. Hand counts: bf16, 128 devices.
LHS_LAYER = hlo_text.parse((FIXTURES / "collectives_lhs.hlo").read_text())
NOLHS_LAYER = hlo_text.parse((FIXTURES / "collectives_nolhs.hlo").read_text())


def test_a_combined_reduce_scatter_moves_every_operand_of_every_layer():
    """llama-qkv-offload-lhs: one `reduce-scatter-start` per layer takes five gradients (the MLP
    input [16384,53248] and four attention projections); an `all-gather-start` in the same layer
    gathers one [128,53248] shard into [16384,53248]."""
    moved = traffic(LHS_LAYER)["collectives"]
    gradients = 2 * (16384 * 53248 + 2 * 16384 * 128 * 8 + 2 * 16384 * 128 * 128)
    assert moved["reduce-scatter"]["bytes"] == 126 * gradients
    assert moved["reduce-scatter"]["bus_bytes"] == 126 * int(gradients * 127 / 128)
    assert moved["all-gather"]["bytes"] == 126 * 2 * 128 * 53248 * 128  # the shard times the group
    assert moved["reduce-scatter"]["count"] == moved["all-gather"]["count"] == 126
    assert moved["all-gather"]["groups"] == [128]
    # both asynchronous start / done pairs: none runs on the compute stream
    assert moved["reduce-scatter"]["synchronous"] == moved["all-gather"]["synchronous"] == 0


def test_a_synchronous_reduce_scatter_moves_its_operands_not_its_shard():
    """Without LHS the same gradients are reduce-scattered synchronously: its shape is only the
    result shard ([128,53248] twice here), its operands two [16384,53248] gradients. DeepSeek's
    expert gate gradient, likewise: a [1024,4096,8] operand, an [8,4096,8] result."""
    moved = traffic(NOLHS_LAYER)["collectives"]
    assert moved["reduce-scatter"]["bytes"] == 126 * 2 * 2 * 16384 * 53248
    # a plain `reduce-scatter` is what XLA leaves synchronous: all 126, with all their bytes
    assert moved["reduce-scatter"]["synchronous"] == moved["reduce-scatter"]["count"] == 126
    assert moved["reduce-scatter"]["synchronous_bytes"] == moved["reduce-scatter"]["bytes"]
    deepseek = [
        "  %loop_select_fusion = bf16[1024,4096,8]{2,1,0} fusion(%input_concatenate_fusion.10.remat3), kind=kLoop",
        "  %reduce-scatter.8.2 = bf16[8,4096,8]{2,1,0} reduce-scatter(%loop_select_fusion), channel_id=199,"
        " replica_groups=mesh['diloco'=1,'data'=1,'stage'=1,'fsdp'=128,'fsdp_transpose'=1,'context'=1] {'fsdp'},"
        " use_global_device_ids=true, dimensions={0}, to_apply=%add.1.clone",
    ]
    operand, scatter = (hlo_text.parse_instruction(line) for line in deepseek)
    layer = hlo_text.Computation("layer", True, [operand, scatter], {i.name: i.shape for i in (operand, scatter)})
    found = hlo_schedule.instruction_events({"layer": layer}, layer, scatter, {})
    assert [(e.what, e.buffer, e.group) for e in found] == [("reduce-scatter", 2 * 1024 * 4096 * 8, 128)]


# cuDNN flash attention as compiled for GB200: one forward and one backward call of Llama 3.1 405B
# (2 x 8192 tokens, 128 query heads of 128, 8 key-value heads) and of DeepSeek-V3 (MLA: 8 x 4096
# tokens, 128 heads, query-key head dim 192, value head dim 128), each line copied from its program.
ATTENTION = (FIXTURES / "cudnn_attention.hlo").read_text().splitlines()


def test_cudnn_attention_forward_is_maxtexts_formula_and_backward_recomputes_qk():
    """The forward pass is MaxText's causal attention of one layer (2 x batch x length^2 x heads x
    (query-key + value head dim) / 2); the backward pass is twice that and one more QK^T, which
    cuDNN recomputes instead of storing the scores."""
    llama_forward, llama_backward, mla_forward, mla_backward = (
        hlo_flops.attention_flops(hlo_text.parse_instruction(line)) for line in ATTENTION
    )
    qk = 2 * 2 * 128 * 8192 * 8192 * 128 // 2  # one causal matmul, head dim 128
    assert llama_forward == 2 * qk == 4 * 2 * 8192**2 * 128 * 128 // 2  # MaxText: 4 B S^2 H D / 2
    assert llama_backward == 5 * qk
    scores = 2 * 8 * 128 * 4096 * 4096 // 2
    assert mla_forward == scores * (192 + 128) == 2 * 8 * 4096 * 4096 * 128 * (192 + 128) // 2
    assert mla_backward == 2 * mla_forward + scores * 192


def test_each_directions_host_copies_say_what_their_start_and_done_span():
    copy = {"direction": "to_host", "bytes": 1, "runs_per_step": 126, "asynchronous": True, "flops_between": 0}
    copies = [copy, copy | {"flops_between": 5e12}, copy | {"asynchronous": False, "runs_per_step": 1}]
    assert prediction.copy_summary(copies) == {
        "copies": 3,
        "per_step": 253,
        "asynchronous": 2,
        "synchronous": 1,
        "asynchronous_spanning_nothing": 1,
        "flops_spanned_low": 0,
        "flops_spanned_high": 5e12,
    }
    assert prediction.copy_summary([])["flops_spanned_low"] is None


def program(events: dict[str, list[Event]], model_flops: float = 1e16) -> dict:
    return {
        "events": events,
        "ideal_events": events,
        "entry": "main",
        "clones": xla_clones.count({}, {}),  # none, and no transfers: what an empty program gives
        "rematerialization": xla_clones.limit([]),
        "flops": Flops(total=int(model_flops), gemm=int(model_flops)),
        "unknown_loops": [],
        "transfers": step_traffic.transfers({}, {}),
        "model_flops": model_flops,
        "computations": {},
    }


def test_the_model_hides_what_the_schedule_overlaps_and_exposes_the_rest():
    rates = step_model.Rates(flops_per_s=1e12, to_host_bytes_per_s=1e9, from_host_bytes_per_s=1e9)
    copy, done = Event("start", channel="to_host", bytes=int(4e9), key="c"), Event("done", key="c")
    ten_seconds = Event("compute", flops=int(10e12))
    hidden = {"main": [copy, ten_seconds, done]}
    assert step_model.step_seconds(hidden, "main", rates) == pytest.approx(10)  # 4 s copy under 10 s compute
    exposed = {"main": [ten_seconds, copy, done]}
    assert step_model.breakdown(exposed, "main", rates) == pytest.approx(
        {
            "step_s": 14,
            "compute_s": 10,
            "memory_bound_s": 0,
            "exposed_host_copy_s": 4,
            "exposed_collective_s": 0,
            "exposed_network_s": 0,
        }
    )
    # a loop of 5: each iteration awaits the copy the one before started, starts the next, computes
    # for 2 s (pipelined): a 3 s copy sets the pace, a 0.3 s one hides
    body = [done, Event("start", channel="from_host", bytes=int(3e9), key="c"), Event("compute", flops=int(2e12))]
    looped = {"main": [Event("loop", body="layer", times=5)], "layer": body}
    assert step_model.step_seconds(looped, "main", rates) == pytest.approx(5 * 3)
    assert step_model.step_seconds(
        looped, "main", dataclasses.replace(rates, from_host_bytes_per_s=1e10)
    ) == pytest.approx(10)
    # MaxText's dense MoE dispatch is counted but not charged
    dispatch = {"main": [Event("compute", flops=int(10e12), unspent=int(4e12))]}
    assert step_model.step_seconds(dispatch, "main", rates) == pytest.approx(6)
    # an instruction takes the longer of its FLOPs and its HBM bytes; one without FLOPs costs its bytes
    hbm = dataclasses.replace(rates, hbm_bytes_per_s=1e11)
    roofline = {"main": [Event("compute", flops=int(1e12), bytes=int(3e11)), Event("compute", bytes=int(2e11))]}
    assert step_model.step_seconds(roofline, "main", hbm) == pytest.approx(3 + 2)
    assert step_model.breakdown(roofline, "main", hbm)["memory_bound_s"] == pytest.approx(4)
    # a collective takes the longer of NVLink and the network, at the chosen end of its band
    crossing = Event("transfer", channel="collective", bytes=int(1e9), network_ring=4e9, network_floor=0.5e9)
    links = dataclasses.replace(rates, collective_bytes_per_s=1e9, network_bytes_per_s=1e9)
    assert step_model.step_seconds({"main": [crossing]}, "main", links) == pytest.approx(4)
    floor = dataclasses.replace(links, network_end="floor")
    assert step_model.step_seconds({"main": [crossing]}, "main", floor) == pytest.approx(1)
    assert step_model.breakdown({"main": [crossing]}, "main", links)["exposed_network_s"] == pytest.approx(3)
    # calibration finds the compute rate that gives a published throughput
    rate = step_model.calibrate(exposed, "main", 10e12, 10e12 / 12, rates)
    assert step_model.step_seconds(exposed, "main", dataclasses.replace(rates, flops_per_s=rate)) == pytest.approx(12)


def llama_rows(published: dict[str, float] | float) -> dict:
    """The Llama rows with published throughputs of the test's choosing (a number: the baseline's)."""
    rows = {row_id: row for row_id, row in ROWS.items() if row.family == "llama"}
    chosen = published if isinstance(published, dict) else {"llama-baseline": published}
    for row_id, value in chosen.items():
        row = rows[row_id]
        rows[row_id] = dataclasses.replace(row, published={**row.published, "tflops_per_device": value})
    return rows


def predicted_result(
    rows: dict, programs: dict, target: str = "gb200-nvl72", source: dict | None = None, speed: dict = SPEED
) -> dict:
    """The programs predicted on `target`, calibrated on GB200: there, or from `source` (GB200's prediction)."""
    published = published_throughputs(rows, speed, CLAIMS)
    return prediction.predict_programs(rows, programs, {}, load_target(target), speed, GB200, source, published)


def llama_programs(lhs_flops: float = 10e15, lhs_copy_bytes: float = 4e11) -> dict[str, dict]:
    """Three small stand-ins: the baseline recomputes more; the offload rows copy to the host,
    hidden (LHS: `lhs_copy_bytes` under `lhs_flops` of compute) or not (LHS disabled)."""
    copy, done = Event("start", channel="to_host", bytes=int(4e11), key="q"), Event("done", key="q")
    lhs_copy = dataclasses.replace(copy, bytes=int(lhs_copy_bytes))
    return {
        "llama-baseline": program({"main": [Event("compute", flops=int(11e15))]}),
        "llama-qkv-offload-lhs": program({"main": [lhs_copy, Event("compute", flops=int(lhs_flops)), done]}),
        "llama-qkv-offload-nolhs": program({"main": [Event("compute", flops=int(10e15)), copy, done]}),
    }


@pytest.fixture(scope="module")
def stand_in() -> dict:
    """The Llama stand-ins predicted on GB200, the baseline's published throughput 2,669 TFLOPs/s/device."""
    return predicted_result(llama_rows(2669), llama_programs())


@pytest.fixture(scope="module")
def stand_in_whatif(stand_in) -> dict[str, dict]:
    """The same stand-ins predicted for GB300 and Vera Rubin from GB200's calibration, by target."""
    return {target: predicted_result(llama_rows(2669), llama_programs(), target, stand_in) for target in WHATIF}


@pytest.fixture(scope="module")
def stand_in_page(tmp_path_factory, tables, stand_in, stand_in_whatif) -> str:
    """The page of the stand-ins' predictions for every GPU target, beside the real GB200 compiles
    and Vera Rubin's compile of deepseek-device-mb8."""
    work = tmp_path_factory.mktemp("stand-in-page")
    inputs = [*COMPILED, RESULTS / "compiled/vr-nvl144/deepseek-device-mb8.json"]
    for target, predicted in {"gb200-nvl72": stand_in, **stand_in_whatif}.items():
        inputs.append(work / f"predicted-{target}.json")
        write_result(inputs[-1], "predicted", predicted)
    return rendered_page(work, tables, "cpu", inputs)


# A ratio claim's record of the pair-error stage, its rows inside the chip's measured regimes.
INSIDE = {
    "family": "llama",
    "chip_error": {"largest_abs_pp": 3.0, "mean_abs_pp": 1.2, "sign_agrees": 5, "over": ["a", "b", "c", "d", "e"]},
    "source_error": None,
    "regime": 0.08,
    "chip_range": {"low": 0.07, "high": 1.36},
    "inside_chip_range": True,
    "outside_by": None,
}


def judged(
    published: dict[str, float] | float, claims: list[dict], path: Path, records: dict[str, dict] | None = None
) -> list[dict]:
    """The claims judged by the Llama stand-ins' prediction, written to `path` (the verdicts read it);
    `records`: by claim, the pair-error stage's record."""
    result = write_result(path, "predicted", predicted_result(llama_rows(published), llama_programs()))
    observations = [obs.record() for obs in predicted_observations(result, str(path))]
    evidence = views(observations, {"gb200-nvl72": GB200})
    qualifying = {"source-hardware": ["gb200-nvl72"]}
    return [
        judge_one(claim, claim["judged_by"][0], evidence, qualifying, None, (records or {}).get(claim["id"]))
        for claim in claims
    ]


def consistent(programs: dict) -> dict[str, float]:
    """Published throughputs that the model itself predicts at one rate: its measured error is 0."""
    at = target_rates.rates(GB200, 4e15, CENTRAL, "nvfp4", SPEED)
    return {row: target_rates.throughput(program, at) for row, program in programs.items()}


def speed_claim(claim_id: str, check: dict, published: float | None = None, tolerance: dict | None = None) -> dict:
    """A speed claim judged by prediction, with its one tolerance."""
    rule = {"evidence": "predicted", "hardware": "source-hardware"}
    return {
        "id": claim_id,
        "kind": "relation" if published is None else "value",
        "statement": claim_id,
        "citation": {"quote": claim_id},
        "check": {"metric": "tflops_per_device", **check},
        "published": published,
        "tolerance": tolerance or {"relative": 0.1},
        "judged_by": [rule],
    }


def test_a_prediction_never_uses_the_published_number_of_a_row_it_judges(tmp_path):
    # published numbers within a few percent of what the stand-ins predict at one rate
    model = consistent(llama_programs())
    published = {row: value * factor for (row, value), factor in zip(model.items(), (1.0, 1.02, 0.97), strict=True)}
    claims = [
        speed_claim("own", {"type": "value", "rows": ["llama-baseline"]}, published["llama-baseline"]),
        speed_claim("other", {"type": "value", "rows": ["llama-qkv-offload-lhs"]}, published["llama-qkv-offload-lhs"]),
        speed_claim(
            "gain", {"type": "ratio", "rows": ["llama-qkv-offload-lhs", "llama-baseline"]}, 0.029, {"absolute": 0.02}
        ),
    ]
    first = judged(published, claims, tmp_path / "first.json", {"gain": INSIDE})
    second = judged(published | {"llama-baseline": published["llama-baseline"] * 0.75}, claims, tmp_path / "2.json")
    own, other, gain = first
    # the baseline's own number is judged by a calibration on another row, and not moved by it...
    assert own["calibrated_on"] != "llama-baseline" and "not llama-baseline" in own["note"]
    assert own["observed"] == pytest.approx(second[0]["observed"])
    # ...while another row's value is calibrated on the baseline, so it moves with the baseline's number
    assert other["calibrated_on"] == "llama-baseline" and other["observed"] != second[1]["observed"]
    # the baseline is the only remat row: without its own number no pair of its kind measures an error
    assert own["verdict"] == "inconclusive" and own["reason"].startswith("unmeasured")
    # the measured error widens every other band; the prediction lies inside it
    for judgement in (other, gain):
        assert judgement["band"]["low"] <= judgement["observed"] <= judgement["band"]["high"]
    assert 0 < other["band"]["error"] < 1 and other["band"]["error_unit"] == "fraction"
    assert gain["observed"] == pytest.approx(11 / 10 - 1)  # the stand-ins: 10% fewer FLOPs, copies hidden
    # a ratio of two placements takes the chip's error on such ratios, in pp: within 3 pp of each prediction
    assert (gain["band"]["error"], gain["band"]["error_unit"]) == (3.0, "pp")
    assert gain["band"]["high"] - gain["band"]["low"] >= 0.06 - 1e-12
    # without the stage's record, its error is unmeasured: an error across scales never stands in
    assert second[2]["verdict"] == "inconclusive" and second[2]["reason"].startswith("unmeasured")


def family_facts(
    family: str, remat: str, errors: dict[tuple[str, str], float]
) -> tuple[dict[str, dict], dict[str, Predicted]]:
    """A model's rows of published throughput as predicted evidence gives them, as (facts,
    predictions): each calibrated by default on the remat row `remat` (every other row offloads),
    its published throughput derived as experiments/speed.yaml's leave_one_out says; each predicted
    under every calibration, with the leave-one-out errors {(calibrated on, predicted): error} of
    `errors`, as the rows' prediction records them."""
    published = published_throughputs(ROWS, SPEED, CLAIMS)[family]
    facts = {
        row: {
            "family": family,
            "calibrated_on": remat,
            "placement_kind": "remat" if row == remat else "offload",
            "published_sources": entry["sources"],
        }
        for row, entry in published.items()
    }
    calibrated = {row: Predicted({on: [1.0] for on in published}) for row in published}
    for (calibrated_on, predicted), error in errors.items():
        calibrated[predicted].loo_errors[calibrated_on] = error
    return facts, calibrated


def test_a_throughput_implied_by_a_claim_never_calibrates_that_claim():
    """DeepSeek's remat and plain-offload throughputs are implied by the optimized row's 908.2 and
    the published speedups: judging the 908.2 by either would judge it by itself."""
    published = published_throughputs(ROWS, SPEED, CLAIMS)["deepseek"]
    assert published["deepseek-remat"]["tflops"] == pytest.approx(908.2 / 1.57)
    assert published["deepseek-offload-plain"]["sources"] == [
        "deepseek-offload-plain",
        "deepseek-offload-optimized",
        "deepseek-optimized-vs-plain",
    ]
    errors = {
        ("deepseek-remat", "deepseek-offload-plain"): 0.3,  # remat derives from this claim
        ("deepseek-offload-plain", "deepseek-remat"): 0.01,
        ("deepseek-offload-plain", "deepseek-offload-optimized"): 0.2,
    }
    facts, calibrated = family_facts("deepseek", "deepseek-remat", errors)
    value = speed_claim("value", {"type": "value", "rows": ["deepseek-offload-optimized"]}, 908.2)
    assert judged_by_prediction.choose_calibration(value, facts, calibrated)[0] is None
    ratio = speed_claim("deepseek-optimized-vs-remat", {"type": "ratio", "rows": list(published)[:2]}, 0.57)
    assert judged_by_prediction.choose_calibration(ratio, facts, calibrated)[0] == "deepseek-offload-optimized"
    # the ratio compares an offload row with a remat row: every such pair uses its own 57%
    pair = ("deepseek-offload-optimized", "deepseek-remat")
    error, why = judged_by_prediction.measured_error(ratio, facts, calibrated, pair)
    assert error is None and why.startswith("unmeasured") and "offload ↔ remat" in why
    # an offload-offload comparison is measured on the offload-offload pairs
    offload_pair = ("deepseek-offload-optimized", "deepseek-offload-plain")
    plain = speed_claim("plain", {"type": "ratio", "rows": list(offload_pair)})
    assert judged_by_prediction.measured_error(plain, facts, calibrated, offload_pair)[0] == 0.2


def test_a_claims_own_published_values_never_calibrate_it_nor_enter_its_error(claim_by_id):
    """'+2.9%' is exactly 2,746 / 2,669 - 1: neither number calibrates it, and the pairs between them,
    the claim itself, never measure its error; what is left of its kind (offload against remat) is nothing."""
    claim = claim_by_id["llama-qkv-lhs-vs-baseline"]
    assert set(claim["derives_from"]) == {"llama-qkv-offload-lhs", "llama-baseline"}
    facts, calibrated = family_facts(
        "llama",
        "llama-baseline",
        {
            ("llama-baseline", "llama-qkv-offload-lhs"): -0.081,
            ("llama-qkv-offload-lhs", "llama-baseline"): 0.093,
            ("llama-baseline", "llama-qkv-offload-nolhs"): -0.075,
            ("llama-qkv-offload-nolhs", "llama-qkv-offload-lhs-pipelined"): -0.008,
        },
    )
    calibrated_on, _ = judged_by_prediction.choose_calibration(claim, facts, calibrated)
    assert calibrated_on in ("llama-qkv-offload-nolhs", "llama-qkv-offload-lhs-pipelined")
    pair = ("llama-qkv-offload-lhs", "llama-baseline")
    error, why = judged_by_prediction.measured_error(claim, facts, calibrated, pair)
    assert error is None and why.startswith("unmeasured")
    # the throughput claim of a row it does not derive from is measured on the pairs of its kind
    value = claim_by_id["llama-qkv-nolhs-throughput"]
    assert judged_by_prediction.choose_calibration(value, facts, calibrated)[0] == "llama-baseline"
    pair = judged_by_prediction.compared_pairs(value, "llama-baseline")[0]
    assert judged_by_prediction.measured_error(value, facts, calibrated, pair)[0] == pytest.approx(0.093)
    # and the ordering of the four published throughputs derives from all four: nothing calibrates it
    assert judged_by_prediction.choose_calibration(claim_by_id["llama-lhs-off-slowest"], facts, calibrated)[0] is None


@pytest.mark.parametrize("error", [-0.35, -0.081, 0.0, 0.093, 0.35])
def test_the_published_value_that_produced_an_error_lies_in_its_band(error):
    """e = predicted / published - 1: the band [predicted / (1 + |e|), predicted / (1 - |e|)] holds the
    published value that gave e (DeepSeek's 908.2 predicted at 590.4 from remat's calibration: e = -35%)."""
    published = 908.2
    predicted = published * (1 + error)
    check = {"type": "value", "rows": ["a"]}
    found = judged_by_prediction.band(check, {"a": [predicted]}, {("a", "c"): abs(error)}, [("central", "ring")])
    assert found["low"] <= published * (1 + 1e-12) and published <= found["high"] * (1 + 1e-12)
    assert judged_by_prediction.verdict(check, found, published, {"relative": 0.1}) != "fail"


def test_a_ratio_band_from_a_calibrated_row_is_widened_once():
    """Calibrated on b, b's prediction is its published value, exact by construction: only a's
    prediction carries the pair's error, so the quotient is widened once, not both rows."""
    check = {"type": "ratio", "rows": ["a", "b"]}
    series = {"a": [1.054 * 2669.0], "b": [2669.0]}
    found = judged_by_prediction.band(check, series, {("a", "b"): 0.095}, [("central", "ring")])
    assert found["low"] == pytest.approx(1.054 / 1.095 - 1)
    assert found["high"] == pytest.approx(1.054 / 0.905 - 1)


def test_a_setting_where_no_rate_calibrates_leaves_that_side_open():
    """Predictions that fall as the links slow, and no rate at the slowest link: the band's low side is open."""
    settings = [("central", "ring"), ("low", "ring"), ("high", "ring")]
    check = {"type": "value", "rows": ["a"]}
    found = judged_by_prediction.band(check, {"a": [100.0, None, 110.0]}, {("a", "c"): 0.01}, settings)
    assert found["low"] is None and found["high"] == pytest.approx(110.0 / 0.99)
    assert judged_by_prediction.verdict(check, found, 105.0, {"relative": 0.5}) == "inconclusive"
    rising = judged_by_prediction.band(check, {"a": [100.0, None, 90.0]}, {("a", "c"): 0.01}, settings)
    assert rising["high"] is None and rising["low"] == pytest.approx(90.0 / 1.01)


@pytest.mark.parametrize("published", [-0.1, 0.0, 0.029, 0.05, 0.5])
@pytest.mark.parametrize("error", [0.0, 0.01, 0.1, 0.35])
def test_a_predicted_fail_is_impossible_when_the_published_value_lies_in_the_band(published, error):
    """Around every published value, bands that contain it, of every width, at every tolerance:
    none fails; a band wholly inside the tolerance passes; one that straddles it is inconclusive."""
    check = {"type": "ratio", "rows": ["a", "b"]}
    settings = [("central", "ring"), ("low", "ring")]
    inside = narrow = 0
    # 5% off: a band that holds the published value inside, not on an edge floating point may leave
    # it just outside of; -published: no gap at all, a band narrower than the widest tolerance.
    for offset in (-0.2, -0.05, 0.0, 0.05, 0.2, 0.05 * published, -published):
        central = published + offset
        series = {"a": [1 + central, 1 + central * 0.9], "b": [1.0, 1.0]}
        found = judged_by_prediction.band(check, series, {("a", "b"): error}, settings)
        for tolerance in ({"absolute": 0.001}, {"absolute": 0.02}, {"absolute": 1.0}):
            verdict = judged_by_prediction.verdict(check, found, published, tolerance)
            if found["low"] <= published <= found["high"]:
                inside += 1
                assert verdict != "fail"
            if tolerance["absolute"] >= 1.0 and found["high"] - found["low"] < 1.0 and found["low"] <= published:
                narrow += 1
                assert verdict in ("pass", "inconclusive")
    assert inside > 0 and narrow > 0  # both properties were checked at these parameters


def test_an_ordering_is_decided_only_where_the_gaps_exceed_the_error():
    settings = [("central", "ring"), ("low", "ring")]
    check = {"type": "greater", "rows": ["a", "b"]}
    series = {"a": [110.0, 120.0], "b": [100.0, 100.0]}
    decided = judged_by_prediction.band(check, series, {("a", "b"): 0.01}, settings)
    assert judged_by_prediction.verdict(check, decided, None, None) == "pass"
    wide = judged_by_prediction.band(check, series, {("a", "b"): 0.1}, settings)  # 1.1 / 1.1 is not above 1
    assert wide["holds_at"] == 2 and wide["decided_for"] == 1
    assert judged_by_prediction.verdict(check, wide, None, None) == "inconclusive"
    fastest = {"type": "fastest", "rows": ["a", "b", "c"], "expect": "c"}
    slower = {"a": [130.0], "b": [100.0], "c": [110.0]}
    errors = {("c", "a"): 0.05, ("c", "b"): 0.05}
    found = judged_by_prediction.band(fastest, slower, errors, [("central", "ring")])
    assert judged_by_prediction.verdict(fastest, found, None, None) == "fail"


def test_the_page_shows_what_prediction_decided_and_why(stand_in_page):
    """Stand-in predictions for the Llama rows beside the real compiled fixtures: the page counts
    verdicts by the evidence that decided them, marks a claim decided by prediction on its line,
    and shows the speed section with each row's terms and each speed claim's explanation."""
    html = stand_in_page
    assert 'id="counts-by-evidence"' in html and '<span class="ev ev-predicted">predicted</span>' in html
    decided = html[html.index('<tr id="claim-llama-qkv-lhs-throughput"') :]
    decided = decided[: decided.index("</tr>")]
    assert "by prediction only: no run judged it" in decided
    speed = html[html.index('<section id="speed">') :]
    speed = speed[: speed.index("</section>")]
    assert 'id="speed-llama-qkv-offload-nolhs"' in speed and "the calibration row" in speed
    assert 'id="speed-claim-llama-qkv-lhs-vs-baseline"' in speed and "calibrated on llama-baseline" in speed
    assert 'id="model-error"' in speed and "What each term earns" in speed
    assert "exposed host copies" in speed
    assert raw_placeholders(html) == []


def test_a_speed_claim_judged_by_prediction_is_judged_again_under_each_alternative(tmp_path):
    """Under an alternative the rows are predicted again from its programs: here the offload row
    computes more under one of them, and the ordering it was judged on turns."""
    claim = speed_claim("lhs-faster", {"type": "greater", "rows": ["llama-qkv-offload-lhs", "llama-baseline"]})
    published = consistent(llama_programs(10e15, 1e11))  # the model's measured error is 0 by default

    def predicted_file(name: str, offload_flops: float) -> str:
        result = predicted_result(llama_rows(published), llama_programs(offload_flops, 1e11))
        path = tmp_path / name / "predicted.json"
        write_result(path, "predicted", {"cross_checks": [], **result})
        return str(path)

    default, slow = predicted_file("default", 10e15), predicted_file("slow", 12e15)
    observations = [o.record() for o in predicted_observations(read_result(default, "predicted"), default)]
    qualifying = {"source-hardware": ["gb200-nvl72"]}
    # no error on real GPUs recorded: the band is the leave-one-out error alone
    kinds = {"llama": {"families": ["llama"], "what": "dense", "recorded_error": None}}
    # the ordering compares two placements: its band takes the pair-error stage's error on such ratios
    judge = varied_verdicts(
        lambda chosen, seen: check_claims(
            chosen, views(seen, {"gb200-nvl72": GB200}), qualifying, kinds, {"lhs-faster": INSIDE}
        )
    )
    alternatives = [
        {"id": "same", "results": {}, "predicted": default},
        {"id": "slow", "results": {}, "predicted": slow},
        {"id": "unpredicted", "results": {}},
        {
            "id": "too-big",
            "results": {"llama-qkv-offload-lhs": {"status": "ok", "fits": False, "device_gib": 250.04, "file": None}},
            "predicted": default,
        },
    ]
    # an alternative of another model's rows predicts this model again (here, slower), but cannot change
    # it: its claims keep the default prediction
    elsewhere = {"id": "slow", "results": {}, "predicted": slow}
    sensitivity = {
        "target": "gb200-nvl72",
        "assumptions": [
            {"id": "speed", "affects": ["llama-qkv-offload-lhs"], "alternatives": alternatives},
            {"id": "other-model", "affects": ["deepseek-remat"], "alternatives": [elsewhere]},
        ],
    }
    # a compiled fact of a row no alternative compiled again stays in every alternative's evidence
    fits = {"evidence": "compiled", "target": "gb200-nvl72", "row": "llama-baseline", "policy": None, "at": None}
    observations += [
        fits | {"metric": "status", "value": "ok", "message": None},
        fits | {"metric": "outcome", "value": "fits"},
    ]
    outcome = {
        **speed_claim("baseline-fits", {"type": "outcome", "rows": ["llama-baseline"], "expect": "fits"}),
        "judged_by": [{"evidence": "compiled", "hardware": "any"}],
    }
    everything = robustness([claim, outcome], observations, sensitivity, judge, {}, {})
    assert [u["verdict"] for u in everything["baseline-fits"]["under"]] == ["pass"] * 5
    found = everything["lhs-faster"]
    assert (found["by"], found["default"], found["robust"]) == ("predicted", "pass", False)
    # more compute makes the offload row slower, by more than the recorded error on such ratios: the
    # ordering turns, decided against
    assert [u["verdict"] for u in found["under"]] == ["pass", "fail", "untested", "untested", "pass"]
    assert found["depends_on"] == ["speed"] and found["untested"] == ["speed.unpredicted", "speed.too-big"]
    # a row that does not fit under an alternative is not predicted: the claim says so
    assert found["under"][3]["why"] == "llama-qkv-offload-lhs is out of memory under it (250.0 GiB)"


@pytest.fixture(scope="module")
def real_page(tmp_path_factory, tables) -> tuple[str, dict]:
    """The page of the real GB200 prediction beside the real GB200 compiles, and its verdicts."""
    work = tmp_path_factory.mktemp("real-page")
    html = rendered_page(work, tables, "cpu", [*COMPILED, RESULTS / "compiled/as-run/llama-baseline.json", PREDICTED])
    return html, read_result(work / "verdicts.json", "verdicts")


def test_the_page_splits_the_model_flops_and_shows_each_offload_rows_host_copies(real_page):
    """A real prediction (five rows compiled for GB200, both calibration rows among them): the FLOPs
    table sets MaxText's components beside the counted FLOPs without labels, and each offload row
    has a table of its host copies."""
    html, _ = real_page

    def cells(element_id: str) -> list[str]:
        found = re.search(rf'<(tr|table)[^>]* id="{element_id}"[^>]*>(.*?)</\1>', html, re.S).group(2)
        return [" ".join(visible_text(cell).split()) for cell in re.findall(r"<td[^>]*>(.*?)</td>", found, re.S)]

    # Llama: FFN, QKV, output projection, unembedding; the weights: model, counted, beyond; the
    # attention: model, counted, beyond (cuDNN's backward recomputes QK^T: a sixth of the model's)
    llama = cells("flops-llama-baseline")[1:]
    assert llama == [
        "32,418.0", "3,740.5", "3,324.9", "206.6", "39,690.0", "39,690.0", "0",
        "1,662.5", "1,939.5", "277.1", "41,352.5",
    ]  # fmt: skip
    assert cells("flops-deepseek-offload-optimized")[11] == "8,206.7"
    assert "MoE: gate, shared and routed experts" in html
    assert 'id="copies-llama-baseline"' not in html  # no host copies, no table
    # with LHS the copies to the host span a layer's compute; without it no copy spans any
    assert cells("copies-llama-qkv-offload-lhs") == [
        "to the host", "3 (378)", "3", "0", "0", "98.96\u2013107.8",
        "from the host", "3 (378)", "3", "0", "3", "0",
    ]  # fmt: skip
    assert cells("copies-llama-qkv-offload-nolhs")[4::6] == ["3", "3"]
    # the fixture's programs were compiled with XLA's rematerialisation pass on: its missed limit
    # and its clones (5 GEMMs, 1 all-gather, 52 others in llama-qkv-offload-lhs), the baseline none
    assert cells("clones-llama-qkv-offload-lhs")[1:] == [
        "141.8", "210", "5", "7,410.6", "1", "67.65", "52", "3,777.2",
    ]  # fmt: skip
    assert cells("clones-llama-baseline")[1:3] == ["met (no warning)", "0"]
    assert raw_placeholders(html) == []


def test_a_calibration_row_that_cannot_reach_its_published_throughput_is_said_so_not_a_crash():
    """Under an alternative a published row's transfers alone may take longer than its published
    step: it is left uncalibrated, with why, and its family calibrates on its other rows."""
    programs = llama_programs()
    programs["llama-baseline"] = program({"main": [Event("transfer", channel="collective", bytes=int(1e15))]})
    result = predicted_result(llama_rows(2669.0), programs)
    unreachable = [u for u in result["uncalibrated"].values() if u["row"] == "llama-baseline"]
    assert unreachable and all("no compute rate reaches it" in u["reason"] for u in unreachable)
    assert "llama-baseline" not in result["calibration"]["llama"]["nvfp4"]
    for row in result["rows"]:
        assert row["tflops_per_device"] and row["calibrated_on"] != "llama-baseline"


def test_each_link_runs_at_its_own_measured_share_and_a_link_without_one_at_the_stated_range():
    """GB200 at the central level: HBM at 90% of XLA's 7.93 TB/s, NVLink at 77% of 900 GB/s one way,
    InfiniBand at 93% of 50 GB/s, and host copies at 45% of NVLink-C2C's 450 GB/s (202.5 GB/s: below
    the 255.5 GB/s each GPU gets of its Grace's memory when both copy); Vera Rubin states no
    measurement, so its links take experiments/speed.yaml's 75%."""
    settings = target_rates.settings(SPEED)
    assert CENTRAL.level == "central" and [s.level for s in settings[:3]] == ["central", "low", "high"]
    at = target_rates.rates(GB200, 1e15, CENTRAL, "nvfp4", SPEED)
    assert at.hbm_bytes_per_s == pytest.approx(7_928_064_000_000 * 0.90)
    assert at.collective_bytes_per_s == pytest.approx(900e9 * 0.77)
    assert at.network_bytes_per_s == pytest.approx(50e9 * 0.93)
    assert at.to_host_bytes_per_s == at.from_host_bytes_per_s == pytest.approx(450e9 * 0.45)
    rubin = load_target("vr-nvl144")
    assert target_rates.link_efficiency(rubin, "hbm", "central", SPEED) == SPEED["link_efficiency"]["central"] == 0.75
    # no share above the cited peak anywhere
    links = target_rates.LINKS
    assert all(target_rates.link_efficiency(GB200, link, s.level, SPEED) <= 1 for s in settings for link in links)


def test_a_target_without_an_fp4_peak_predicts_llama_at_bf16():
    llama = ROWS["llama-baseline"]
    assert target_rates.precisions(SPEED, llama, GB200) == ["nvfp4", "nvfp4-bf16-gathers", "bfloat16"]
    # FP4 GEMMs with bf16 gathers: FP4's peak, bf16's bytes per gathered weight
    bf16_gathers = target_rates.rates(GB200, 1e15, CENTRAL, "nvfp4-bf16-gathers", SPEED)
    assert target_rates.peak_flops(GB200, "nvfp4-bf16-gathers", SPEED) == 10000e12
    assert bf16_gathers.weight_gather_bytes == 2.0 and bf16_gathers.attention_share == 0.25
    assert target_rates.precisions(SPEED, llama, load_target("h200-1")) == ["bfloat16"]


def test_a_prediction_in_a_precision_whose_peak_the_target_does_not_state_is_refused_by_name(stand_in_whatif):
    """The Llama rows are calibrated at NVFP4 on GB200; Vera Rubin's file states a BF16 peak only: its
    Llama rows are not predicted (never GB200's share of the FP4 peak carried to BF16), and the
    result says which peak is missing; DeepSeek (BF16 on both) is predicted."""
    predicted = stand_in_whatif["vr-nvl144"]
    assert {row["status"] for row in predicted["rows"]} == {"refused"}
    assert all(row.get("tflops_per_device") is None for row in predicted["rows"])
    message = predicted["rows"][0]["message"]
    assert "calibrated at nvfp4 on gb200-nvl72" in message
    assert "vr-nvl144.yaml states no nvfp4 peak (hardware.peak_dense_tflops.nvfp4)" in message
    assert prediction.other_precision(ROWS["deepseek-remat"], load_target("vr-nvl144"), SPEED, GB200) is None
    lines = [o for o in predicted_observations(predicted, "predicted.json") if o.metric == "status"]
    assert len(lines) == len(llama_programs()) and {(o.status, o.message[:40]) for o in lines} == {
        ("refused", message[:40])
    }


def test_a_page_whose_runs_are_on_the_predicted_hardware_sets_predicted_beside_measured(tmp_path, tables):
    """An H200 page: the row ran there (a real run result, re-targeted here) and was predicted for
    that GPU from the source's calibration; the speed table puts the two side by side and the page
    states the model's error on that hardware."""
    run = json.loads((RESULTS / "cpu/runs/llama-qkv-offload-lhs.json").read_text()) | {"target": "h200-1"}
    compiled = json.loads((RESULTS / "compiled/gb200-nvl72/llama-qkv-offload-lhs.json").read_text())
    compiled |= {"target": "h200-1"}
    # H200 states no FP4 peak: the Llama rows are predicted there under the alternative of their GEMM
    # precision that runs them at BF16 on GB200 too (a calibration is never carried across precisions)
    speed = copy.deepcopy(SPEED)
    speed["precision"]["families"]["llama"] = ["bfloat16"]
    rows = llama_rows(1500)  # a throughput BF16's peak reaches (2,669 would need more than GB200's 2,500)
    source = predicted_result(rows, llama_programs(), speed=speed)
    programs = {"llama-qkv-offload-lhs": llama_programs()["llama-qkv-offload-lhs"]}
    predicted = predicted_result(rows, programs, "h200-1", source, speed)
    (row,) = predicted["rows"]
    assert row["precision"] == "bfloat16" and row["calibration_precision"] == "bfloat16" and row["tflops_per_device"]
    paths = [tmp_path / "run.json", tmp_path / "compiled.json", tmp_path / "predicted.json"]
    for path, kind, data in zip(paths, ("run", "compile", "predicted"), (run, compiled, predicted), strict=True):
        write_result(path, kind, {key: value for key, value in data.items() if key not in ("kind", "schema_version")})
    html = rendered_page(tmp_path, tables, "h200-1", paths, compile_target="h200-1")
    speed = html[html.index('<section id="speed">') :]
    assert "measured</span> here" in speed and 'id="error-on-hardware"' in speed
    error = row["tflops_per_device"][0] / run["tflops_per_device"] - 1
    assert f"{abs(error) * 100:.1f}%" in speed[speed.index('id="error-on-hardware"') :]
    assert raw_placeholders(html) == []


# Two fusions of llama-baseline's layer scan, copied from its GB200 program with the instructions
# that feed them (tests/fixtures/README.md): the backward pass writes one layer's f32 gradient into
# the stacked [126,...] buffer in place, and reads one layer's saved activations out of another.
MEMORY_FUSIONS = (FIXTURES / "memory_traffic.hlo").read_text()


def test_a_fusion_costs_the_bytes_it_touches_not_the_stacked_buffers_it_slices():
    """Hand counts: the in-place update reads the bf16 [128,53248] gradient and writes it as f32,
    never the [126,128,53248] stack (1/126 of it); the slice reads and writes one layer of the
    bf16 [126,2,8192,16384] activations and writes a [2,8192] f32 sum of squares."""
    computations = hlo_text.parse(MEMORY_FUSIONS)
    layer = computations["layer"]
    by_name = {i.name: i for i in layer.instructions}
    update = memory_traffic.instruction_bytes(computations, layer, by_name["loop_dynamic_update_slice_fusion.4"])
    index = 4  # the s32 layer index each fusion reads
    assert update == 2 * 128 * 53248 + 4 * 128 * 53248 + index
    assert update < 4 * 126 * 128 * 53248 / 50  # one layer of the 126-layer stack it lives in
    read = memory_traffic.instruction_bytes(computations, layer, by_name["input_dynamic_slice_reduce_fusion"])
    one_layer = 2 * 2 * 8192 * 16384
    assert read == one_layer + index + one_layer + 4 * 2 * 8192
    # bookkeeping moves nothing
    assert memory_traffic.instruction_bytes(computations, layer, by_name["get-tuple-element.552"]) == 0


def test_a_clone_of_xlas_rematerialisation_is_recognised_and_counted_by_kind():
    """Lines copied from llama-qkv-offload-lhs's GB200 program (tests/fixtures/README.md): the
    unembedding GEMM and its clone, an all-gather clone in the layer scan, the element-wise clones
    that feed the GEMM clone. Only the instructions named `.remat` are clones; the GEMM clone does
    the original's FLOPs again, the all-gather clone gathers a layer's weights again."""
    computations = hlo_text.parse((FIXTURES / "xla_clones.hlo").read_text())
    counted = xla_clones.count(computations, hlo_schedule.timelines(computations))
    unembedding = 2 * 16384 * 16384 * 128256  # [16384, 16384] x [16384, 128256]
    assert counted["gemm"]["instructions"] == 1 and counted["gemm"]["flops"] == unembedding
    flops, _ = hlo_flops.count_flops(computations)
    assert flops.gemm == 2 * unembedding  # the original and its clone
    assert counted["collective"]["instructions"] == 1
    assert counted["collective"]["collective_bytes"] == 16384 * 128 * 128 * 2  # the gathered bf16 result
    # the convert, norm, rsqrt and multiply clones that feed it, and two bitcasts and a convert's
    assert counted["other"]["instructions"] == 7 and counted["other"]["flops"] == 0
    assert not xla_clones.is_clone("gemm_fusion_dot.60") and xla_clones.is_clone("loop_multiply_fusion.5.remat.1")


def test_xlas_rematerialisation_limit_is_read_from_its_warning():
    """The warning of llama-qkv-offload-lhs's GB200 compile, as XLA wrote it."""
    warning = (
        "Can't reduce memory use below 141.85GiB (152306945637 bytes) by rematerialization; only reduced to"
        " 209.97GiB (225455235284 bytes), down from 212.19GiB (227835569724 bytes) originally"
    )
    assert xla_clones.limit([warning]) == {
        "met": False,
        "limit_bytes": 152306945637,
        "reached_bytes": 225455235284,
        "original_bytes": 227835569724,
    }
    assert xla_clones.limit([])["met"] is True
    off = "--xla_gpu_enable_latency_hiding_scheduler=true --xla_disable_hlo_passes=rematerialization"
    assert xla_clones.limit([], off)["met"] is None  # the pass did not run: no limit to meet


def test_the_ideal_overlap_starts_each_transfer_when_ready_and_awaits_it_at_first_use():
    """Lines copied from llama-qkv-offload-nolhs's GB200 program: two gradient GEMMs, then their
    synchronous combined reduce-scatter. As scheduled it stops the compute stream; in the ideal
    overlap it starts in place and is awaited where its result is first read (here: nowhere in the
    body, so at its end)."""
    body = next(name for name in NOLHS_LAYER if name.startswith("region_10"))
    scheduled = hlo_schedule.schedule(NOLHS_LAYER)[body]
    ideal = hlo_schedule.schedule(NOLHS_LAYER, ideal=True)[body]
    assert [e.kind for e in scheduled] == ["compute", "compute", "transfer"]
    assert [e.kind for e in ideal] == ["compute", "compute", "start", "done"]
    assert ideal[2].bytes == scheduled[2].bytes and ideal[3].key == ideal[2].key
    # an async pair starts as soon as its operand is ready (before work it does not read) and is
    # awaited past the instructions that do not read its result, through a renaming
    hand = textwrap.dedent(
        """
        ENTRY %main (p: bf16[128,64]) -> bf16[128,64] {
          %p = bf16[128,64]{1,0} parameter(0)
          %first = bf16[128,64]{1,0} add(%p, %p)
          %start = ((bf16[128,64]{1,0}), bf16[256,64]{1,0}) all-gather-start(%p), replica_groups={{0,1}}, dimensions={0}
          %done = bf16[256,64]{1,0} all-gather-done(%start)
          %renamed = bf16[256,64]{1,0} bitcast(%done)
          %other = bf16[128,64]{1,0} add(%p, %p)
          ROOT %use = bf16[256,64]{1,0} add(%renamed, %renamed)
        }
        """
    )
    program = hlo_text.parse(hand)
    kinds = [(e.kind, e.bytes > 0) for e in hlo_schedule.schedule(program, ideal=True)["main"]]
    assert kinds == [("start", True), ("compute", True), ("compute", True), ("done", False), ("compute", True)]
    as_scheduled = [e.kind for e in hlo_schedule.schedule(program)["main"]]
    assert as_scheduled == ["compute", "start", "done", "compute", "compute"]


def test_a_calibration_above_its_precisions_dense_peak_is_ruled_out_with_the_number():
    """Llama's published 2,669 TFLOPs/s/device from a program that counts twice the model's FLOPs
    would need 5,338 TFLOP/s of BF16 GEMMs: 214% of GB200's 2,500 dense BF16 peak, not a rate."""
    doubled = program({"main": [Event("compute", flops=int(2e16))]}, model_flops=1e16)
    with pytest.raises(leave_one_out.AbovePeak, match=r"ruled out: reaching it needs 214% to 214% of the bfloat16"):
        leave_one_out.calibrate_row(doubled, 2669.0, GB200, SPEED, "bfloat16")
    # at FP4's 10,000 it is a rate: 53% of that peak
    (rate, *_) = leave_one_out.calibrate_row(doubled, 2669.0, GB200, SPEED, "nvfp4")
    assert rate == pytest.approx(2 * 2669e12, rel=1e-9)


def test_the_page_shows_the_prediction_of_the_compile_target_it_is_given(tmp_path, tables, gb200_prediction):
    """With the what-if, every GPU target has a prediction: a page built for compile_target
    gb300-nvl72 shows GB300's, never the alphabetically first target's (GB200's)."""
    gb300 = {**gb200_prediction, "target": "gb300-nvl72"}
    gb300["rows"] = [
        {**row, "tflops_per_device": [1234.5] * len(row["tflops_per_device"])} if row.get("tflops_per_device") else row
        for row in gb200_prediction["rows"]
    ]
    (tmp_path / "gb300.json").write_text(json.dumps(gb300))
    inputs = [PREDICTED, tmp_path / "gb300.json"]
    _, verdicts, page = build_report(tmp_path, tables, inputs, compile_target="gb300-nvl72")
    assert json.loads(verdicts.read_text())["compile_target"] == "gb300-nvl72"
    html = with_appendix(page)
    assert "compiled for <strong>NVIDIA GB300" in html
    assert "1,234.5" in html  # GB300's prediction in the speed table


def test_the_page_says_within_what_memory_the_programs_were_planned(real_page):
    """The speed section names the memory XLA planned the programs within, from their compiles."""
    html, _ = real_page
    assert "planned within the memory a run gives XLA: 92% of each GPU (169.6 GiB)" in html
    assert "allocator-memory-fraction" in html


def test_a_precision_every_calibration_rules_out_is_no_alternative(stand_in):
    """The stand-ins count 10% more FLOPs than the model's: Llama's published throughputs would
    need BF16 GEMMs at about 2.9 PFLOP/s, above GB200's 2.5 dense peak. BF16 is then ruled out
    with its numbers, and no combination of precisions offers it."""
    (ruled_out,) = stand_in["ruled_out_precisions"]
    assert (ruled_out["family"], ruled_out["precision"]) == ("llama", "bfloat16")
    assert 1 < ruled_out["low_share"] <= ruled_out["high_share"]
    offered = [combination["precision"]["llama"] for combination in stand_in["by_precision"]]
    assert offered == ["nvfp4", "nvfp4-bf16-gathers"]


def test_a_measured_runs_gradient_reduce_scatters_move_the_bf16_bytes_of_its_weights():
    """llama2-70b-bf16-128gpu (NVIDIA's published H100 run, compiled here as it ran): its
    reduce-scatters, copied with their operands and the loops that run them
    (tests/fixtures/reduce_scatter_h100_llama2.hlo), move each step the bf16 gradient of every
    weight before sharding: Llama 2 70B's 68,976,648,192 parameters by hand from its MaxText config
    (80 layers of 3 MLP matrices 8192 x 28672, Q and O 8192 x 64 x 128, K and V 8192 x 8 x 128 and
    two norms; embedding and unembedding 32000 x 8192; the final norm). On 16 nodes of 8 GPUs the
    ring's crossings spread over the 8 NICs of a node."""
    computations = hlo_text.parse((FIXTURES / "reduce_scatter_h100_llama2.hlo").read_text())
    layer = 3 * 8192 * 28672 + 2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128 + 2 * 8192
    weights = 80 * layer + 2 * 32000 * 8192 + 8192
    assert weights == 68_976_648_192
    moved = traffic(computations, (8, 16, 1))["collectives"]
    scatter = moved["reduce-scatter"]
    assert scatter["bytes"] == 2 * weights and scatter["groups"] == [128] and scatter["count"] == 80
    assert scatter["bus_bytes"] == pytest.approx(2 * weights * 127 / 128, rel=1e-6)
    assert scatter["network_ring_bytes"] == pytest.approx(scatter["bus_bytes"] / 8, rel=1e-6)


def test_a_claim_left_unjudged_under_an_alternative_is_told_its_own_familys_reasons(gb200_prediction):
    """Why no calibration was found under an alternative, per row: the reasons of the row's family at
    the precision it is predicted at, never another family's or a ruled-out precision's."""
    reasons = uncalibrated(gb200_prediction)
    deepseek = gb200_prediction["uncalibrated"]["deepseek-offload-optimized/bfloat16"]["reason"]
    assert reasons["deepseek-offload-plain"] == reasons["deepseek-offload-optimized"] == [deepseek]
    assert "llama-baseline" not in reasons  # Llama is predicted at nvfp4: its bfloat16 alternative is ruled out
    assert uncalibrated(None) == {}


def test_each_models_stated_calibration_is_one_that_calibrates_within_the_peak(gb200_prediction):
    """A calibration that needs more than its precision's dense peak is ruled out, never the stated
    one: on the real GB200 prediction, DeepSeek's optimized row (above the peak at every setting where
    a rate reaches it) is ruled out at DeepSeek's precision, no row is predicted on it, and each model's
    stated calibration row, where the prediction has it, is the one its rows are predicted on."""
    rows = [r for r in gb200_prediction["rows"] if r["status"] == "ok"]
    precision_of = {r["row"]: r["precision"] for r in rows}
    ruled_out = {
        e["row"] for key, e in gb200_prediction["uncalibrated"].items() if key == f"{e['row']}/{precision_of[e['row']]}"
    }
    assert ruled_out == {"deepseek-offload-optimized"}
    for family, stated in load_speed()["calibration"]["rows"].items():
        assert stated not in ruled_out
        calibrated = {r["calibrated_on"] for r in rows if r["family"] == family}
        assert not calibrated & ruled_out
        if stated in precision_of:
            assert calibrated == {stated}, family


def test_the_predicted_chart_draws_each_value_claims_prediction_and_the_band_its_verdict_took(real_page):
    """The real GB200 prediction judged, then drawn: a row a value claim judges shows that claim's
    prediction and band (the error on real GPUs included), the same numbers as its verdict; before,
    the chart widened each row by its family's leave-one-out error alone, another band."""
    html, verdicts = real_page
    claim = next(c for c in verdicts["claims"] if c["id"] == "llama-qkv-lhs-throughput")
    judgement = next(j for j in claim["judgements"] if j["evidence"] == "predicted")
    band = judgement["band"]
    assert band["error_from"] == "real GPUs" and band["error"] == pytest.approx(0.216)
    spec = re.search(r'<script type="application/json" id="spec-predicted">(.*?)</script>', html, re.S).group(1)
    data = next(iter(json.loads(spec.replace("<\\/", "</"))["datasets"].values()))
    drawn = next(d for d in data if d["row"] == "llama-qkv-offload-lhs" and d["source"] == "predicted")
    assert drawn["tflops"] == pytest.approx(judgement["observed"])
    assert (drawn["low"], drawn["high"]) == (pytest.approx(band["low"]), pytest.approx(band["high"]))
    # a physical bound: widened by 21.6% the band spans more than a fifth of the prediction
    assert (drawn["high"] - drawn["low"]) / drawn["tflops"] > 0.2


def test_every_whatif_targets_prediction_is_on_the_page_beside_gb200s_with_the_error_across_hardware(
    stand_in_page, stand_in_whatif
):
    """Stand-in Llama programs predicted for GB200 (calibrated there), GB300 (its FP4 peak stated: the
    calibration's share of it; no band of an error across hardware, since no carry of an NVFP4 share
    was measured, and the page says so, experiments/validation.yaml) and Vera Rubin (no FP4 peak
    stated: refused, the page says why), beside the real compiled fixtures; a row that has no compile
    on a target says so in its cell."""
    html = stand_in_page
    line = re.search(r'<tr id="predicted-whatif-llama-baseline">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r"<td class=\"num\">(.*?)</td>", line, re.S)
    assert len(cells) == 3  # gb200-nvl72, gb300-nvl72, vr-nvl144
    assert "<strong>2,669" in cells[0] and "across hardware" not in cells[0]
    gb300 = next(r for r in stand_in_whatif["gb300-nvl72"]["rows"] if r["row"] == "llama-baseline")
    assert gb300["calibration_precision"] == "nvfp4" and "<strong>" in cells[1] and "step " in cells[1]
    assert "across hardware" not in cells[1]
    assert "not predicted" in cells[2] and "states no nvfp4 peak" in cells[2]
    assert (
        "no band: the error of gb200-nvl72's nvfp4 llama calibration carried to other hardware is unmeasured"
    ) in visible_text(html)
    # the compiled grid: Llama has no compile for Vera Rubin here, and its cell says so
    grid = re.search(r'<tr id="whatif-llama-baseline">(.*?)</tr>', html, re.S).group(1)
    assert 'not compiled: <span class="small">no compiled result for this target</span>' in grid
    assert raw_placeholders(html) == []
