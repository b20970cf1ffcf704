"""The evidence table's metric names: the one owner, read by the observers that write them, the
verdicts and claims that judge them and the pages that show them.

A metric keeps the name of the quantity its result file records, in the unit the table holds it
in: a compile's `device_bytes` is `device_gib` here, in `experiments/claims.yaml`, in a row's
`published` values and on the page. A name means one quantity: the host memory a compiled
program holds (`host_gib`) is not the bytes a row's tensors offload by the analytic count
(`offloaded_gib`), although the source's 70.9 GiB claim is judged by both.

No name carries a value (never `tflops_per_device@<calibration row>`): a prediction under another
calibration than its row's default is read from its result, not the table. `known` says whether a
name is one of these; the evidence table refuses any other (tests/judge/test_metric_names.py holds
the lists below equal to the result fields they name).
"""

from __future__ import annotations

import re

# --- memory of one program or run (GiB) ---
DEVICE_GIB = "device_gib"  # what one device holds: a compile's memory analysis, a run's peak
HOST_GIB = "host_gib"  # what a compiled program holds in host memory
OFFLOADED_GIB = "offloaded_gib"  # analytic: the bytes a row's tensors offload per step
DEVICE_SAVED_GIB = "device_saved_gib"  # analytic: the device bytes that placement saves per step
MARGIN_GIB = "margin_gib"
CAPACITY_GIB = "capacity_gib"
# the share of the GPU JAX's allocator takes: what a row must fit within (core/gpu.py)
ALLOCATOR_LIMIT_GIB = "allocator_limit_gib"
HOST_FITS = "host_fits"
OUTCOME = "outcome"  # fits | oom
STATUS = "status"
HLO_SHA256 = "hlo_sha256"  # the digest of a compiled program's optimized HLO
# a run's own program, as XLA compiled it where it ran (the run's `compiled_memory`), and the
# memory XLA:TPU said a program it refused would need (in the runtime's words)
PROGRAM_DEVICE_GIB = "program_device_gib"
PROGRAM_HOST_GIB = "program_host_gib"
REFUSED_NEEDING_GIB = "refused_needing_gib"
RUNTIME_OVER_PROGRAM = "runtime_over_program"  # a run's peak / its program's compiled peak - 1

# --- speed ---
TFLOPS = "tflops_per_device"
STEP_TIME_S = "step_time_s"  # a run's measured step
PUBLISHED_TFLOPS = "published_tflops"  # the published throughput a prediction was compared with
PUBLISHED_SOURCES = "published_sources"  # what that number derives from: rows and claims (a list)
PUBLISHED_IMPLIED = "published_implied"  # it is implied by a published speedup, not stated for the row
PREDICTED_OVER_PUBLISHED = "predicted_over_published"
ERROR_AGAINST_MEASURED = "error_against_measured"  # predicted / measured - 1 on the hardware measured
# ... and over a target's rows (facts about the target: row None)
ERROR_AGAINST_MEASURED_ROWS = "error_against_measured_rows"
ERROR_AGAINST_MEASURED_MEAN_ABS = "error_against_measured_mean_abs"
ERROR_AGAINST_MEASURED_LARGEST_ABS = "error_against_measured_largest_abs"
# on hardware with no calibration of its own: the prediction with the band of the error a calibration
# carried across hardware was measured to have (experiments/validation.yaml)
TFLOPS_ACROSS_HARDWARE = "tflops_per_device_across_hardware"
STEP_S_ACROSS_HARDWARE = "step_s_across_hardware"
CALIBRATED_ON = "calibrated_on"  # the row (or run) a prediction's default calibration is
UNPREDICTED_WHY = "unpredicted_why"  # why no calibration of a row's model predicts it (the result's words)
FAMILY = "family"
PLACEMENT_KIND = "placement_kind"

# A predicted step's terms, in the order they add up (produce/predicted/step_model.TERMS), and
# how the pages and explanations name them.
STEP_S = "step_s"
STEP_TERMS = {
    "compute_s": "compute",
    "memory_bound_s": "memory-bound work",
    "exposed_host_copy_s": "exposed host copies",
    "exposed_collective_s": "exposed collectives (NVLink)",
    "exposed_network_s": "network between NVLink domains",
}

# Families: one name per member, built here.
COLLECTIVE_KINDS = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")
CLONE_KINDS = ("gemm", "collective", "other")  # produce/predicted/xla_clones.KINDS
CLONE_MEASURES = ("instructions", "tflops_per_step", "hbm_gb_per_step", "collective_gb_per_step")
MODEL_COMPONENTS = ("ffn", "qkv", "output_projection", "embedding")  # MaxText's split of its model FLOPs
COPY_SIDES = ("to_host", "from_host")
COPY_MEASURES = (
    "copies",
    "copies_per_step",
    "copies_asynchronous",
    "copies_synchronous",
    "copies_spanning_nothing",
    "copy_span_low_tflop",
    "copy_span_high_tflop",
)
# each direction's host copies as a TPU profile shows them (produce/measured/trace.py: tpu_copies)
PROFILED_COPY_MEASURES = ("copy_gb_per_step", "copy_in_flight_s_per_step", "copy_exposed_s_per_step")
NETWORK_ENDS = ("ring", "floor")
DIRECTIONS = ("d2h", "h2d")


def collective_gb(kind: str) -> str:
    return f"{kind}_gb_per_step"


def collective_runs(kind: str, synchronous: bool = False) -> str:
    """How many collectives of a kind run per step; `synchronous`: of them, on the compute stream."""
    return f"{kind}_synchronous_per_step" if synchronous else f"{kind}_per_step"


# per kind: how many run per step, and how many of them synchronously
COLLECTIVE_RUNS = tuple(collective_runs(kind, sync) for kind in COLLECTIVE_KINDS for sync in (False, True))


def clone(kind: str, measure: str) -> str:
    return f"clone_{kind}_{measure}"


def copy_side(side: str, measure: str) -> str:
    return f"{side}_{measure}"


def model_component(component: str) -> str:
    return f"model_{component}_tflops_per_step"


def tensor_mib_per_layer(tensor: str) -> str:
    return f"{tensor}_mib_per_layer"


# A run measured elsewhere, as the validation stage predicted it (its step terms are STEP_TERMS).
MEASURED_RUN = (
    "source",
    "model",
    "precision",
    "gpus",
    "measured_step_s",
    "predicted_step_s",
    "error",
    "simple_model_error",
    "every_run_mean_abs_error",
    "every_run_largest_abs_error",
    "across_hardware_step_s",
    "across_hardware_error",
    "untested",  # why no run of its own GPU and precision tests its prediction, where none does
    "not_carried",  # why (c) carries no calibration of the source to it, where it carries none
)

NAMES = frozenset(
    {
        DEVICE_GIB,
        HOST_GIB,
        OFFLOADED_GIB,
        DEVICE_SAVED_GIB,
        MARGIN_GIB,
        CAPACITY_GIB,
        HOST_FITS,
        OUTCOME,
        STATUS,
        HLO_SHA256,
        PROGRAM_DEVICE_GIB,
        PROGRAM_HOST_GIB,
        REFUSED_NEEDING_GIB,
        RUNTIME_OVER_PROGRAM,
        TFLOPS,
        STEP_TIME_S,
        PUBLISHED_TFLOPS,
        PUBLISHED_SOURCES,
        PUBLISHED_IMPLIED,
        PREDICTED_OVER_PUBLISHED,
        ERROR_AGAINST_MEASURED,
        ERROR_AGAINST_MEASURED_ROWS,
        ERROR_AGAINST_MEASURED_MEAN_ABS,
        ERROR_AGAINST_MEASURED_LARGEST_ABS,
        CALIBRATED_ON,
        TFLOPS_ACROSS_HARDWARE,
        STEP_S_ACROSS_HARDWARE,
        FAMILY,
        PLACEMENT_KIND,
        STEP_S,
        *STEP_TERMS,
        *(collective_gb(kind) for kind in COLLECTIVE_KINDS),
        *COLLECTIVE_RUNS,
        *(clone(kind, measure) for kind in CLONE_KINDS for measure in CLONE_MEASURES),
        *(model_component(component) for component in MODEL_COMPONENTS),
        *(copy_side(side, measure) for side in COPY_SIDES for measure in COPY_MEASURES),
        *(f"network_{end}_{what}" for end in NETWORK_ENDS for what in ("gb_per_nic", "s_per_step")),
        *(f"{direction}_{what}" for direction in DIRECTIONS for what in ("gb_s", "of_limit")),
        # measured runs
        "tokens_per_s_per_device",
        "host_peak_rss_gib",
        "loss",
        "final_loss",
        "host_copies",
        "copy_s_per_step",
        "compute_s_per_step",
        "copy_hidden_fraction",
        "exposed_copy_s_per_step",
        "copy_in_flight_s_per_step",
        "copy_hidden_fraction_at_most",
        *(copy_side(side, measure) for side in COPY_SIDES for measure in PROFILED_COPY_MEASURES),
        "wall_time_s",
        "link_limit_gb_s",
        # compiles
        "compile_s",
        "compile_peak_rss_gib",
        "moe_dispatch",  # how an MoE program routes tokens to its experts, in words
        # the memory XLA planned the program within and it must fit: the run's allocator share of the GPU
        "allocator_share",
        ALLOCATOR_LIMIT_GIB,
        "host_buffers",
        "expected_host_buffers",
        "host_buffer_gib",
        "expected_host_buffer_gib",
        "async_pairs",
        "host_capacity_gib",
        "model_tflops_per_step",
        "xla_tflops_per_step",
        "xla_memory_warning",
        "remat_pass",
        "remat_limit_met",
        "remat_limit_gib",
        "remat_reached_gib",
        # analytic
        "offloaded_mib_per_layer",
        # capacity frontiers and the transfer budget
        "largest_fitting_micro_batch",
        "policy_published",
        "frontier_device_gib",
        "frontier_fits",
        "whatif_copy_s_per_step",
        "whatif_step_s",
        "whatif_copy_share",
        "whatif_link_gb_s",
        # predictions: FLOPs, bytes, copies
        "counted_tflops_per_step",
        "rematted_tflops_per_step",
        "unspent_tflops_per_step",
        "recompute_tflops_per_step",
        "recompute_share",
        "model_weights_tflops_per_step",
        "model_attention_tflops_per_step",
        "unlabelled_gemm_tflops_per_step",
        "unlabelled_attention_tflops_per_step",
        "gemm_beyond_model_tflops_per_step",
        "attention_beyond_model_tflops_per_step",
        "host_copy_gib_per_step",
        "hbm_gb_per_step",
        "collective_gb_per_step",
        "implied_host_gb_s_per_direction",
        UNPREDICTED_WHY,
        "offload_gain",
        *MEASURED_RUN,
    }
)
# A tensor's bytes per layer: its name is data (experiments/tensors.yaml), so the family is a pattern.
TENSOR_PATTERN = re.compile(r"[a-z0-9_]+_mib_per_layer")


def known(name: str) -> bool:
    return name in NAMES or TENSOR_PATTERN.fullmatch(name) is not None
