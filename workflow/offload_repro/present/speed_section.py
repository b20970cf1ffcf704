"""The page's speed section: what the compiled programs and the step-time model say about each
row's step (FLOPs, bytes, collectives, host copies), the speed claims' predicted judgements, and
the model's calibration and measured error."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import Row
from offload_repro.present.lookup import Lookup

COLLECTIVE_KINDS = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")
CLONE_KINDS = ("gemm", "collective", "other")  # produce/predicted/xla_clones.KINDS, as the observers name them
CLONE_MEASURES = ("instructions", "tflops_per_step", "hbm_gb_per_step", "collective_gb_per_step")
SPEED_COLUMNS = (
    "model_tflops_per_step",
    "counted_tflops_per_step",
    "rematted_tflops_per_step",
    "unspent_tflops_per_step",
    "recompute_share",
    "host_copy_gib_per_step",
    "hbm_gb_per_step",
    "step_s",
    "compute_s",
    "memory_bound_s",
    "exposed_host_copy_s",
    "exposed_collective_s",
    "exposed_network_s",
    "tflops_per_device",
    "calibrated_on",
    "published_tflops",
    "implied_host_gb_s_per_direction",
    "network_ring_gb_per_nic",
    "network_floor_gb_per_nic",
    "network_ring_s_per_step",
    "network_floor_s_per_step",
    *(f"{kind}_gb_per_step" for kind in COLLECTIVE_KINDS),
    *(f"clone_{kind}_{what}" for kind in CLONE_KINDS for what in CLONE_MEASURES),
    "remat_pass",
    "remat_limit_met",
    "remat_limit_gib",
    "remat_reached_gib",
)


# MaxText's model FLOPs per component (the compile's split), the weight FLOPs they make, and the
# counted FLOPs without JAX's recompute or MoE dispatch label against them, in page order.
MODEL_COMPONENTS = ("ffn", "qkv", "output_projection", "embedding")
FLOP_COLUMNS = (
    *(f"model_{name}_tflops_per_step" for name in MODEL_COMPONENTS),
    "model_weights_tflops_per_step",
    "unlabelled_gemm_tflops_per_step",
    "gemm_beyond_model_tflops_per_step",
    "model_attention_tflops_per_step",
    "unlabelled_attention_tflops_per_step",
    "attention_beyond_model_tflops_per_step",
    "model_tflops_per_step",
)
COPY_SIDES = {"to_host": "to the host", "from_host": "from the host"}
COPY_COLUMNS = (
    "copies",
    "copies_per_step",
    "copies_asynchronous",
    "copies_synchronous",
    "copies_spanning_nothing",
    "copy_span_low_tflop",
    "copy_span_high_tflop",
)


def flop_components(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    """Each predicted row whose compile split MaxText's model FLOPs: the components beside the counted."""
    lines = []
    for row in rows:
        values = {metric: lookup.value(row.id, "predicted", metric) for metric in FLOP_COLUMNS}
        if values["model_weights_tflops_per_step"] is not None:
            lines.append({"row": row, **values})
    return lines


def host_copies(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    """Each predicted row with host copies: per direction, how many, how many asynchronous, and
    the compute their start / done pairs span."""
    found = []
    for row in rows:
        sides = [
            {"direction": label, **{c: lookup.value(row.id, "predicted", f"{side}_{c}") for c in COPY_COLUMNS}}
            for side, label in COPY_SIDES.items()
            if lookup.value(row.id, "predicted", f"{side}_copies") is not None
        ]
        if sides:
            found.append({"row": row, "sides": sides})
    return found


def speed(
    rows: list[Row],
    lookup: Lookup,
    verdicts: dict[str, Any],
    sources: list[dict[str, Any]],
    target: str | None,
    measured_here: bool = False,
):
    """What the compiled programs say about speed: each row's FLOPs, bytes, collectives and predicted
    step, the model's measured error (and that of simpler models), the speed claims' predicted
    judgements with their explanations, and the model's calibration. `measured_here`: the page's
    runs are on the hardware the rows were predicted for, so each prediction stands beside its run."""
    source = next((s for s in sources if s["kind"] == "predicted" and s["target"] == target), None)
    if source is None:
        return None
    lines = []
    for row in rows:
        values = {metric: lookup.value(row.id, "predicted", metric) for metric in SPEED_COLUMNS}
        status = lookup.value(row.id, "predicted", "status")
        if status is None:
            continue
        published = values["published_tflops"]
        predicted = values["tflops_per_device"]
        measured = lookup.value(row.id, "measured", "tflops_per_device") if measured_here else None
        lines.append(
            {
                "row": row,
                "status": status,
                "message": lookup.message(row.id, "predicted", "status"),
                "band": lookup.band(row.id, "predicted", "tflops_per_device"),
                "published": published,
                # a throughput a published speedup implies (its sources name more than its row)
                "implied": len(str(lookup.value(row.id, "predicted", "published_sources") or "").split()) > 1,
                "ratio": predicted / published if predicted and published else None,
                "measured": measured,
                "measured_error": predicted / measured - 1 if predicted and measured else None,
                "collectives": {kind: values[f"{kind}_gb_per_step"] for kind in COLLECTIVE_KINDS},
                **values,
            }
        )
    judged = []
    for claim in verdicts["claims"]:
        for judgement in claim["judgements"]:
            if judgement["evidence"] == "predicted":
                judged.append({"claim": claim, "judgement": judgement})
    on_hardware = [abs(line["measured_error"]) for line in lines if line.get("measured_error") is not None]
    return {
        "lines": lines,
        "measured_here": measured_here,
        "error_on_hardware": {
            "rows": len(on_hardware),
            "mean_abs": sum(on_hardware) / len(on_hardware),
            "largest_abs": max(on_hardware),
        }
        if on_hardware
        else None,
        "network": network_summary(lines),
        "components": flop_components(rows, lookup),
        "copies": host_copies(rows, lookup),
        "claims": judged,
        "calibration": source.get("calibration") or {},
        "uncalibrated": source.get("uncalibrated") or {},
        "error": source.get("model_error"),
        "ablation": source.get("ablation") or [],
        "by_precision": source.get("by_precision") or [],
        "ruled_out_precisions": source.get("ruled_out_precisions") or [],
        "cross_checks": source.get("cross_checks") or [],
        "assumptions": source["assumptions"],
        "file": source["file"],
    }


def network_summary(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose collectives cross between NVLink domains: the bytes per NIC at each end of the
    band, their time at the network's rate, what the step time charges for them, and the step."""
    return [line for line in lines if line["status"] == "ok" and line["network_ring_gb_per_nic"]]
