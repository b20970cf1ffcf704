"""The step-time model's stated inputs (experiments/speed.yaml) and a target's rates under them:
every setting of the stated uncertainties (the links' achieved share of their bandwidth, low,
central or high, x the network's band x the schedule, in one fixed order, central first), the GEMM
precisions a row is predicted at, and the rates at which the model replays a program. Each link's
share at a level is the target file's, from published measurements (hardware.link_efficiency),
or experiments/speed.yaml's where the target file has none."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from offload_repro.core import gpu
from offload_repro.core.data import Row, Target, link_efficiency
from offload_repro.core.memory import GB
from offload_repro.produce.predicted import step_model

LEVELS = ("central", "low", "high")  # the links' efficiency levels, central first
LINKS = ("hbm", "host_link", "collective_link", "network_link")


class Setting(NamedTuple):
    """One setting of the stated uncertainties: the links' efficiency level (every link at its own
    low, central or high share), an end of the network's band, and which of the program's schedules
    is replayed."""

    level: str
    end: str
    overlap: str = "scheduled"


def settings(speed: dict[str, Any]) -> list[Setting]:
    """Every setting of a prediction, central first: each efficiency level (central, low, high) at
    each network end (ring, then floor), for each schedule (as XLA scheduled it, then the ideal
    overlap)."""
    overlaps = speed.get("overlap", {}).get("ends", ["scheduled"])
    return [
        Setting(level, end, overlap) for overlap in overlaps for end in speed["network"]["ends"] for level in LEVELS
    ]


def efficiency_sentence(target: Target, speed: dict[str, Any]) -> str:
    """Each link's achieved share on the target, low to high, and where it comes from."""
    measured = target.spec["hardware"].get("link_efficiency") or {}
    parts = []
    for link in LINKS:
        share = measured.get(link) or speed["link_efficiency"]
        where = "measured, cited in the target file" if link in measured else "assumed: experiments/speed.yaml"
        parts.append(f"{link} {share['low']:.0%} to {share['high']:.0%} ({share['central']:.0%} central; {where})")
    return f"Links on {target.name} achieve these shares of their cited bandwidth: " + "; ".join(parts) + "."


def peak_flops(target: Target, precision: str, speed: dict[str, Any] | None = None) -> float | None:
    """The target's dense peak for a precision; with `speed`, a choice of experiments/speed.yaml
    named apart from its GEMMs' precision (precision.gemm) takes that precision's."""
    gemm = ((speed or {}).get("precision", {}).get("gemm") or {}).get(precision, precision)
    tflops = (target.spec["hardware"].get("peak_dense_tflops") or {}).get(gemm)
    return tflops * 1e12 if tflops else None


def precisions(speed: dict[str, Any], row: Row, target: Target) -> list[str]:
    """The GEMM precisions a row is predicted at on a target, its default first: those of its
    family that the target has a cited peak for (an H200 has no FP4), else the row's dtype."""
    listed = speed["precision"]["families"].get(row.family, [row.dtype])
    return [precision for precision in listed if peak_flops(target, precision, speed)] or [row.dtype]


def rates(
    target: Target, flops_per_s: float, setting: Setting, precision: str, speed: dict[str, Any]
) -> step_model.Rates:
    """The target's rates at one setting, GEMMs at `flops_per_s` in `precision` (attention at BF16).
    A GPU's host copies get its host link at the link's efficiency, at most its share of its CPU's
    memory bandwidth (every GPU of a CPU copies at once)."""
    level, end, overlap = setting
    share = {link: link_efficiency(target, link, level, speed) for link in LINKS}
    link, memory_share = target.host_link_gb_s_per_direction, target.spec["hardware"].get("host_memory_gb_s_per_gpu")
    host = min(link * share["host_link"], memory_share or math.inf) if link else None
    collective = target.link_gb_s_per_direction("collective_link")
    network = target.link_gb_s_per_direction("network_link")
    hbm = gpu.memory_bandwidth(target)
    gemm_peak, bf16_peak = peak_flops(target, precision, speed), peak_flops(target, "bfloat16")
    return step_model.Rates(
        flops_per_s,
        host * GB if host else math.inf,
        host * GB if host else math.inf,
        collective * GB * share["collective_link"] if collective else math.inf,
        hbm * share["hbm"] if hbm else math.inf,
        network * GB * share["network_link"] if network else math.inf,
        end,
        attention_share=bf16_peak / gemm_peak if gemm_peak and bf16_peak else 1.0,
        weight_gather_bytes=speed["precision"]["gathered_bytes_per_value"].get(precision),
        overlap=overlap,
    )


def replayed(program: dict[str, Any], at: step_model.Rates) -> dict[str, list[Any]]:
    """The program's events under the schedule `at` replays."""
    return program["ideal_events"] if at.overlap == "ideal" else program["events"]


def throughput(program: dict[str, Any], at: step_model.Rates) -> float:
    return program["model_flops"] / step_model.step_seconds(replayed(program, at), program["entry"], at) / 1e12
