"""The step-time model on the programs one TPU v5e ran: XLA:TPU's HLO read (its loops, its dots
printed as convolutions, its Pallas kernels), and the prediction against the kept runs.

The HLO lines are copied from the programs the chip ran (experiments/device-results/tpu-v5e-1/
programs/): tests/fixtures/hlo/tpu-v5e-scan-loop.hlo holds llama-baseline's layer scan, its
condition and the lines of its body that count; tpu-v5e-kernels.hlo a fused query projection
and the first line of each kernel call (each continues over further lines with the kernel's
metadata, cut at `, frontend_attributes=`)."""

from __future__ import annotations

import gzip

import pytest

from conftest import CHIP_CARRY, FIXTURES, PREDICTED, REPO
from offload_repro.core.data import load_target
from offload_repro.core.files import read_json
from offload_repro.core.measured_elsewhere import load_validation
from offload_repro.core.results import read_result
from offload_repro.core.validation_record import unrecorded_carries
from offload_repro.produce.compiled import hlo_text
from offload_repro.produce.predicted import device_prediction, hlo_flops

KEPT = REPO / "experiments" / "device-results"
PROGRAMS = KEPT / "tpu-v5e-1" / "programs"
GiB = 1 << 30


def parsed(name: str) -> dict[str, hlo_text.Computation]:
    return hlo_text.parse((FIXTURES / "hlo" / name).read_text(encoding="utf-8"))


def test_a_scan_loop_xla_tpu_prints_no_trip_count_for_is_counted_from_its_condition():
    computations = parsed("tpu-v5e-scan-loop.hlo")
    loop = next(i for c in computations.values() for i in c.instructions if i.op == "while")
    assert hlo_text.TRIP_COUNT.search(loop.attributes) is None
    assert hlo_text.trip_count(loop) == 8  # the 8 layers the row scales Llama to
    runs, unknown = hlo_flops.executions(computations)
    assert unknown == [] and runs["wide.region_0.16.clone.clone.clone.sunk"] == 8


def test_a_loop_not_of_the_counted_form_has_no_trip_count():
    text = (FIXTURES / "hlo" / "tpu-v5e-scan-loop.hlo").read_text(encoding="utf-8")
    for changed in (text.replace("constant(8)", "constant(8.5)"), text.replace("direction=LT", "direction=NE")):
        loop = next(i for c in hlo_text.parse(changed).values() for i in c.instructions if i.op == "while")
        assert hlo_text.trip_count(loop) is None
    starts_at_one = text.replace(
        "%constant.287 = s32[]{:T(128)} constant(0)", "%constant.287 = s32[]{:T(128)} constant(1)"
    )
    loop = next(i for c in hlo_text.parse(starts_at_one).values() for i in c.instructions if i.op == "while")
    assert hlo_text.trip_count(loop) is None


def kernel(name: str) -> tuple[hlo_text.Computation, hlo_text.Instruction]:
    for computation in parsed("tpu-v5e-kernels.hlo").values():
        for instruction in computation.instructions:
            if instruction.name == name:
                return computation, instruction
    raise KeyError(name)


def test_a_dot_printed_as_a_convolution_counts_only_the_taps_inside_its_input():
    # the query projection of 2 x 8192 tokens, 2048 wide, to 16 heads of 128: a window of 16 over one
    # padded element, each output position meeting that element once
    computation, conv = kernel("convolution.133")
    assert hlo_flops.own_flops(computation, conv) == (2 * 2 * 8192 * 2048 * 16 * 128, "gemm")
    assert hlo_flops.inside_taps(size=1, window=16, pad_low=15) == 16
    assert hlo_flops.inside_taps(size=4, window=2, pad_low=0, stride=2) == 4


def test_splash_attention_kernels_count_their_matmuls_as_causal():
    scores = 2 * 2 * 16 * 8192 * 8192  # batch 2, 16 query heads, 8192 x 8192, halved below
    qk = pv = scores * 128
    for name, matmuls in (
        ("splash_mha_fwd_segmented_residuals.17", qk + pv),
        ("splash_mha_dkv_segmented_no_residuals.10", 2 * qk + 2 * pv),
        ("splash_mha_dq_segmented_no_residuals.10", 2 * qk + pv),
    ):
        computation, call = kernel(name)
        assert hlo_flops.own_flops(computation, call) == (matmuls // 2, "attention")


def test_megablox_grouped_matmuls_count_each_routed_row_once():
    rows = 8 * 4096 * 8  # micro batch 8 x 4096 tokens, each routed to 8 experts
    computation, gmm = kernel("gmm.47")
    assert hlo_flops.own_flops(computation, gmm) == (2 * rows * 1024 * 512, "gemm")
    computation, tgmm = kernel("tgmm.12")
    assert hlo_flops.own_flops(computation, tgmm) == (2 * rows * 512 * 1024, "gemm")


@pytest.fixture(scope="module")
def prediction():
    return device_prediction.predict(load_target("tpu-v5e-1"), KEPT, read_result(PREDICTED, "predicted"))


def test_each_kept_program_is_the_one_that_ran_and_reads_within_physical_bounds(prediction):
    listed = read_json(PROGRAMS / "programs.json")["programs"]
    assert {name for name, p in listed.items() if p["status"] == "ok"} == set(prediction["programs"])
    for name, program in prediction["programs"].items():
        assert program["equals_the_runs_analysis"] is True, name
        assert program["unknown_loops"] == []
        # the program counts every FLOP the model does, and the recompute on top
        assert program["counted_tflops"] >= program["model_tflops"], name
        # what it copies to the host each step is what XLA keeps there (compiled host bytes)
        host = listed[name]["memory"]["host_temp_size_in_bytes"] + listed[name]["memory"]["host_output_size_in_bytes"]
        assert program["host_bytes"]["to_host"] == pytest.approx(host, rel=0.01), name
    # Llama's QKV: 128 MiB per layer at micro batch 2, 8 layers, out and back
    assert prediction["programs"]["llama-qkv-offload-lhs"]["host_bytes"] == {"to_host": GiB, "from_host": GiB}


def test_no_calibration_above_the_peak_and_the_terms_kept_lower_the_error(prediction):
    for found in prediction["models"].values():
        assert all(0 < share <= 1 for share in found["fitted_share_of_peak"].values())
    within = {model: found["chip_within_family"]["mean_abs"] for model, found in prediction["models"].items()}
    assert prediction["kept_model"] == min(within, key=within.get) == "full"
    assert within["full"] < within["no_host_copies"] and within["full"] < within["serial_copies"]
    # a carried calibration names where it comes from, or why there is none
    assert prediction["carried"]["source"]["llama"]["none"].startswith("the source's llama throughputs at bfloat16")
    assert prediction["carried"]["runs_elsewhere"]["llama"]["calibrated_on"] == "h100-sxm/llama2-70b-bf16-64gpu"


def test_the_sources_calibration_carried_to_the_chip_is_a_carry_error_held_to_its_record(prediction):
    """GB200's BF16 DeepSeek share of peak carried to the chip is a measured carry across hardware:
    experiments/validation.yaml records its error (every what-if prediction of DeepSeek takes it as its
    band), from the main job's prediction, which stops where the two differ (predict_device). Here the
    prediction is of the GB200 rows kept in tests/fixtures (compiled with the rematerialisation pass
    on), so its carry is set beside a record of its own, and beside the published one, which it is
    not: the message names both values."""
    (carry,) = prediction["carry_errors"]
    kept = prediction["models"][prediction["kept_model"]]["pairs"]["source"]
    assert (carry["family"], carry["precision"], carry["measured_by"]) == ("deepseek", "bfloat16", "tpu-v5e-1")
    assert carry["pairs"] == len(kept) == 3  # the three DeepSeek programs the chip trained
    # bound: a share of peak carried is within the peak; the error is the largest over the programs
    assert all(0 < p["share_of_peak"] <= 1 for p in kept)
    assert carry["largest_abs"] == max(abs(p["error"]) for p in kept) < 1
    validation = load_validation()
    # the file records none now (no DeepSeek share under the chosen settings): the carry as it was recorded
    assert validation["calibrations"]["across_hardware"]["recorded_errors"] == []
    published = dict(CHIP_CARRY)
    validation["calibrations"]["across_hardware"]["recorded_errors"] = [published]
    assert published["measured_by"] == "tpu-v5e-1" and published["pairs"] == 3
    assert unrecorded_carries(prediction["carry_errors"], "tpu-v5e-1", validation) == [
        "experiments/validation.yaml: field 'calibrations.across_hardware.recorded_errors[0]': records largest_abs"
        f" {published['largest_abs']:.4f}, mean_abs {published['mean_abs']:.4f} over 3 pairs of the bfloat16 deepseek"
        f" carry measured by tpu-v5e-1, this stage computes largest_abs {carry['largest_abs']:.4f}, mean_abs"
        f" {carry['mean_abs']:.4f} over 3 pairs"
    ]
    own = {key: round(value, 4) if isinstance(value, float) else value for key, value in carry.items()}
    validation["calibrations"]["across_hardware"]["recorded_errors"] = [own | {"recorded_from": "this result"}]
    assert unrecorded_carries(prediction["carry_errors"], "tpu-v5e-1", validation) == []
    assert unrecorded_carries([], "tpu-v5e-1", validation)[0].endswith("this stage computes no pair (remove the entry)")
    assert unrecorded_carries(prediction["carry_errors"], "another-chip", validation) == [
        "experiments/validation.yaml: field 'calibrations.across_hardware.recorded_errors': records no bfloat16"
        f" deepseek carry measured by another-chip, this stage computes largest_abs {carry['largest_abs']:.4f},"
        f" mean_abs {carry['mean_abs']:.4f} over 3 pairs"
    ]


def test_the_step_in_its_terms_sums_to_the_predicted_step(prediction):
    for name, program in prediction["programs"].items():
        terms = program["predicted_terms"]
        parts = sum(value for term, value in terms.items() if term != "step_s")
        assert parts == pytest.approx(terms["step_s"]), name
        assert terms["step_s"] == pytest.approx(program["predicted"]["step_s"], rel=0.2), name
    # bound: a program with no host copies exposes none; an offload program's exposed copies take no
    # longer than moving its bytes both ways, one after the other, at the link as measured (14.0 GB/s:
    # an achieved rate, taken whole)
    assert prediction["programs"]["llama-baseline"]["predicted_terms"]["exposed_host_copy_s"] == 0
    for name in ("llama-qkv-offload-lhs", "deepseek-offload-plain"):
        program = prediction["programs"][name]
        moved_s = sum(program["host_bytes"].values()) / 14.0e9
        assert 0 < program["predicted_terms"]["exposed_host_copy_s"] <= moved_s, name
        # and what the chip's core waited for them, in the profile of the run, is of the same size
        waited = read_result(KEPT / "tpu-v5e-1" / "runs" / f"{name}.json", "run")["overlap"]["exposed_copy_s_per_step"]
        assert program["predicted_terms"]["exposed_host_copy_s"] == pytest.approx(waited, rel=0.15), name


def test_the_kept_hlo_is_what_the_prediction_names(prediction):
    import hashlib

    for name, program in prediction["programs"].items():
        text = gzip.decompress((PROGRAMS / f"{name}.hlo.gz").read_bytes())
        assert hashlib.sha256(text).hexdigest() == program["hlo_sha256"]
