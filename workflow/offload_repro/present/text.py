"""Values in words, as the pages write them: the Jinja filters (numbers, signed and unsigned
shares, settings, spreads of repeats, hardware, commits) and a row's flags, placement and failure
each as one line."""

from __future__ import annotations

from typing import Any

import pandas as pd

from offload_repro.core.data import Row, cited_facts
from offload_repro.core.rounding import significant
from offload_repro.judge.spread import range_text, tolerance_text

LHS = "--xla_gpu_enable_latency_hiding_scheduler"
PIPELINED = "--xla_gpu_enable_pipelined_host_offloading"


def fmt(value: Any) -> str:
    """Numbers as a reader wants them: '—' for none, 4 significant digits, thousands separated."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or (float(value).is_integer() and abs(value) >= 1):
        return f"{value:,.0f}"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return significant(value)


def signed(value: float | None) -> str:
    """A margin in GiB with its sign, to one decimal: '+13.6', '-0.9'."""
    return "—" if value is None else f"{value:+.1f}"


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:+.1f}%"


def claim_value(value: Any, unit: str | None) -> str:
    """A claim's value as the post writes it: a fraction (a speed-up) in percent, any other as `fmt` writes it."""
    if unit == "fraction" and isinstance(value, int | float) and not isinstance(value, bool):
        return percent(value)
    return fmt(value)


def claim_tolerance(tolerance: dict[str, Any] | None, unit: str | None) -> str:
    """A tolerance beside its claim's value: an absolute one on a fraction in percentage points ('±1 pp')."""
    if tolerance and unit == "fraction" and "absolute" in tolerance:
        return f"±{tolerance['absolute'] * 100:g} pp"
    return tolerance_text(tolerance)


def points(value: float | None) -> str:
    """A difference of two fractions in percentage points: +3.9 pp (a speed-up's deviation)."""
    return "—" if value is None else f"{value * 100:+.1f} pp"


def settings_text(settings: dict[str, Any]) -> str:
    """An assumption's settings in words: 'max_target_length 4096; MaxText capacity_factor 1.25'."""

    def value_text(value: Any) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{key} {value_text(item)}" for key, item in value.items())
        if isinstance(value, list):
            return " ".join(str(item) for item in value)
        if value == "":
            return "none"
        if value is None:  # a setting left to the target (allocator_memory_fraction: its runs' share)
            return "the target's"
        return str(value).lower() if isinstance(value, bool) else str(value)

    parts = [f"{key} {value_text(value)}" for key, value in settings.get("row", {}).items()]
    parts += [f"MaxText {key} {value_text(value)}" for key, value in settings.get("maxtext", {}).items()]
    if "latency_profile" in settings:  # what XLA's scheduler costs instructions by
        parts.append(f"latency profile {settings['latency_profile']}")
    return "; ".join(parts)


def share(value: float | None) -> str:
    """A part of a whole, unsigned: 17.9%."""
    return "—" if value is None else f"{value * 100:.1f}%"


def spread_text(spread: dict[str, Any] | None) -> str:
    """' (2,700 to 2,760, 3 repeats)' (with an en dash) after a median of repeats; nothing for one run."""
    if not spread or not spread.get("n") or spread["n"] <= 1:
        return ""
    return f" ({range_text(spread, fmt)}, {spread['n']} repeats)"


def commit_text(commit: str | None) -> str:
    """A project commit as a page shows it: a copy of the workflow with no .git has none."""
    return commit or "unknown (not a git checkout)"


def hardware_text(hardware: dict[str, Any]) -> str:
    """A target's hardware as a sentence: '128 x NVIDIA GB200 (4 per node); host link NVLink-C2C, 900 GB/s
    bidirectional; 240 GB host memory per GPU; peak dense bfloat16 2,500 TFLOPs/s per GPU'."""
    devices = hardware["devices"]
    accelerator = hardware.get("accelerator")
    parts = [f"{devices} x {accelerator}" if accelerator else f"{devices} CPU device{'s' if devices != 1 else ''}"]
    if hardware.get("gpus_per_node"):
        parts[0] += f" ({hardware['gpus_per_node']} per node)"
    link = hardware.get("host_link")
    if link:
        parts.append(f"host link {link['name']}, {fmt(link['bandwidth_gb_s'])} GB/s {link['direction']}")
    if hardware.get("host_memory_gb_per_gpu"):
        parts.append(f"{fmt(hardware['host_memory_gb_per_gpu'])} GB host memory per GPU")
    if hardware.get("host_memory_gb_s_per_gpu"):
        shared = hardware["host_memory"]["bandwidth_gb_s_per_cpu"]
        per_gpu = hardware["host_memory_gb_s_per_gpu"]
        parts.append(f"host memory {fmt(shared)} GB/s per CPU, {fmt(per_gpu)} GB/s per GPU when all copy at once")
    # a TPU is a chip, not a GPU: its peak is per chip
    unit = "chip" if "TPU" in (accelerator or "") else "GPU"
    for dtype, tflops in (hardware.get("peak_dense_tflops") or {}).items():
        parts.append(f"peak dense {dtype} {fmt(tflops)} TFLOPs/s per {unit}")
    cited = hardware.get("citations") or {}
    uncited = [fact for fact in cited_facts({"hardware": hardware}) if fact not in cited]
    if uncited:
        parts.append(f"stated without a citation: {', '.join(uncited)}")
    return "; ".join(parts)


def flag_summary(row: Row) -> str:
    """The row's scheduling flags in words: 'LHS on, pipelined offload'."""
    lhs = {"true": "LHS on", "false": "LHS off"}.get(row.xla_flag(LHS) or "", "LHS default")
    return lhs + (", pipelined offload" if row.xla_flag(PIPELINED) == "true" else "")


def placement_summary(row: Row) -> str:
    parts = [f"{where}: {', '.join(row.tensors(where))}" for where in ("offload", "device") if row.tensors(where)]
    return "; ".join(parts) or "remat: " + ", ".join(row.placement)


def failure_note(failure: dict[str, Any] | None) -> str | None:
    """Where a failure's cause was found and how the process ended: 'fatal log line
    (parse_flags_from_env.cc:234), exit status 1; log results/cpu/work/llama-baseline/train.log'."""
    if not failure:
        return None
    ended = failure["signal"] or (
        f"exit status {failure['exit_status']}" if failure["exit_status"] is not None else None
    )
    where = failure["found_in"] if failure["found_in"] not in ("signal", "exit status") else None  # said by `ended`
    note = ", ".join(part for part in (where, ended) if part)
    return note + (f"; log {failure['log']}" if failure["log"] else "")
