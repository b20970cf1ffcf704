"""Predicted evidence: each row's step time and TFLOPs/s/device on a GPU target, from its compiled
program (FLOPs counted with recompute, HBM bytes, host copies, collectives and the traffic between
NVLink domains, the schedule) replayed by the step-time model (`step_model.py`) at the target's
cited rates (`target_rates.py`).

The model has one free parameter, the effective compute rate. On the calibration target every
published (or implied) throughput of a model calibrates it in turn and predicts the others, which
measures the model's error (`leave_one_out.py`). Each row is predicted under every calibration, at
every setting of the stated uncertainties (link efficiency x the network's band), in one fixed
order, so that a claim over several rows is evaluated setting by setting; what-if targets keep each
calibration's share of their own peak.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from offload_repro.core import accounting
from offload_repro.core.data import DataError, Row, Target
from offload_repro.core.maxtext_configs import model_config
from offload_repro.core.memory import GB
from offload_repro.core.published import CLAIMS_FILE, SPEED_FILE, load_speed, published_throughputs
from offload_repro.core.results import read_result, write_result
from offload_repro.core.variants import SEPARATOR
from offload_repro.produce.compiled import hlo_text, model_flops
from offload_repro.produce.compiled.program_cache import compile_overrides, hlo_path
from offload_repro.produce.predicted import hlo_flops, hlo_schedule, step_model, step_traffic, xla_clones
from offload_repro.produce.predicted.leave_one_out import calibrations, error_tables, rates_from
from offload_repro.produce.predicted.target_rates import (
    efficiency_sentence,
    precisions,
    rates,
    replayed,
    settings,
    throughput,
)

SIDES = ("to_host", "from_host")


def network_shape(target: Target, speed: dict[str, Any]) -> hlo_schedule.Network:
    """The target's NVLink domains and NICs, as the schedule reads collectives on them."""
    hardware = target.spec["hardware"]
    per_domain, nodes = hardware.get("nvlink_domain_nodes"), hardware.get("nodes")
    if not per_domain or not nodes or nodes <= per_domain or not target.link_gb_s_per_direction("network_link"):
        return None
    return (
        per_domain * hardware["gpus_per_node"],
        speed["network"]["ring_crossing_nics"],
        hardware.get("nics_per_gpu", 1),
    )


def placement_kind(row: Row) -> str:
    """What a row does with its named tensors, as leave-one-out pairs are told apart: offload where it
    offloads any, else device where it saves any on the device, else remat."""
    return next((kind for kind in ("offload", "device") if row.tensors(kind)), "remat")


# The fingerprint XLA gave the module just before scheduling it, printed in the compiled program: what
# a latency profile names the program by (produce/predicted/model_profile.py).
SCHEDULED_AS = re.compile(r'fingerprint_before_lhs="([0-9a-f]+)"')


def read_program(compiled: dict[str, Any], network: hlo_schedule.Network, keep_parsed: bool = False) -> dict[str, Any]:
    """What the step-time model needs from the row's compiled program; `keep_parsed`: its parsed
    computations, their instructions' events (`timeline`) and its fingerprint too, for a profile."""
    program_file = (compiled.get("program") or {}).get("file")
    if compiled["status"] != "ok" or not program_file:
        raise DataError(f"row {compiled['row']}: no compiled program ({compiled.get('message')})")
    path = hlo_path(Path(program_file))
    if not path.exists():
        raise DataError(f"{path}: the compiled program's HLO is missing; delete {program_file} to compile it again")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        text = handle.read()
    computations = hlo_text.parse(text)
    flops, unknown_loops = hlo_flops.count_flops(computations)
    timeline = hlo_schedule.timelines(computations, network)
    events, ideal_events = hlo_schedule.schedules(computations, timeline)
    parsed = {}
    if keep_parsed:
        found = SCHEDULED_AS.search(text)
        parsed = {"computations": computations, "timeline": timeline, "fingerprint": found and found.group(1)}
    return parsed | {
        "events": events,
        "ideal_events": ideal_events,
        "clones": xla_clones.count(computations, timeline),
        "rematerialization": xla_clones.limit(
            compiled.get("xla_memory_warnings") or [], (compiled.get("provenance") or {}).get("xla_flags") or ""
        ),
        "entry": hlo_text.entry_name(computations),
        "flops": flops,
        "unknown_loops": unknown_loops,
        "transfers": step_traffic.transfers(computations, events),
        "model_flops": compiled["model_tflops_per_device_per_step"] * 1e12,
        "model_components": compiled.get("model_tflops_components"),  # absent before it was recorded
    }


def network(program: dict[str, Any], target: Target, published_step_s: float | None) -> dict[str, Any] | None:
    """The traffic between NVLink domains per step: per collective kind, the bytes the busiest NIC
    carries at each end of the band (ring, floor), the seconds they take at the cited network
    bandwidth, and the bandwidth the published step time would need to carry them."""
    ends = step_model.NETWORK_ENDS
    by_kind = {
        kind: {end: c.get(f"network_{end}_bytes", 0) for end in ends}
        for kind, c in program["transfers"]["collectives"].items()
    }
    totals = {end: sum(kind[end] for kind in by_kind.values()) for end in ends}
    bandwidth = target.link_gb_s_per_direction("network_link")
    if not bandwidth or not any(totals.values()):
        return None
    return {
        "bytes_per_nic": totals,
        "by_kind": by_kind,
        "link_gb_s_per_direction": bandwidth,
        "seconds_at_link": {end: total / (bandwidth * GB) for end, total in totals.items()},
        "published_step_s": published_step_s,
        "needed_gb_s": {
            end: total / published_step_s / GB if published_step_s else None for end, total in totals.items()
        },
    }


def implied_host_gb_s(program: dict[str, Any], at: step_model.Rates, published: float) -> float | None:
    """The host-link bandwidth per direction at which the prediction at `at` equals `published`;
    None when none does (the row is slower than its copies alone explain, or faster than no copies)."""

    def predicted(gb_s: float) -> float:
        return throughput(program, replace(at, to_host_bytes_per_s=gb_s * GB, from_host_bytes_per_s=gb_s * GB))

    low, high = 1.0, 1e6
    if not predicted(low) <= published <= predicted(high):
        return None
    return step_model.log_bisect(predicted, published, low, high)


def copy_summary(copies: list[dict[str, Any]]) -> dict[str, Any]:
    """One direction's host copies: how many instructions and runs per step, how many are
    asynchronous, and the compute their start / done pairs span (none: no compute can hide it)."""
    spans = [c["flops_between"] for c in copies if c["asynchronous"]]
    return {
        "copies": len(copies),
        "per_step": sum(c["runs_per_step"] for c in copies),
        "asynchronous": len(spans),
        "synchronous": len(copies) - len(spans),
        "asynchronous_spanning_nothing": sum(1 for span in spans if span == 0),
        "flops_spanned_low": min(spans, default=None),
        "flops_spanned_high": max(spans, default=None),
    }


def flops_record(program: dict[str, Any]) -> dict[str, Any]:
    flops, model, components = program["flops"], program["model_flops"], program.get("model_components")
    spent = flops.total - flops.unspent
    counted = asdict(flops)  # every count of hlo_flops.Flops, its total as `counted`
    return {
        "model": model,
        "counted": counted.pop("total"),
        **counted,
        "recompute": spent - model,
        "recompute_share": (spent - model) / spent if spent else None,
        # MaxText's model FLOPs per component (`model_ffn`, ...): None where the compile did not split them
        **{f"model_{name}": components[name] * 1e12 if components else None for name in model_flops.COMPONENTS},
    }


def other_precision(row: Row, target: Target, speed: dict[str, Any], calibration_target: Target | None) -> str | None:
    """Why the row is not predicted on this target, where its calibration is in a precision whose
    peak the target does not state: a share of one precision's peak is never carried to another."""
    if calibration_target is None or target.name == calibration_target.name:
        return None
    precision, calibrated = precisions(speed, row, target)[0], precisions(speed, row, calibration_target)[0]
    if precision == calibrated:
        return None
    gemm = speed["precision"].get("gemm", {}).get(calibrated, calibrated)
    return (
        f"not predicted: {row.family} rows are calibrated at {calibrated} on {calibration_target.name}, and"
        f" experiments/targets/{target.name}.yaml states no {gemm} peak (hardware.peak_dense_tflops.{gemm});"
        f" a share of the {gemm} peak is not carried to {precision}"
    )


def predict_row(
    row: Row,
    program: dict[str, Any],
    target: Target,
    speed: dict[str, Any],
    family_calibrations: dict[str, Any],
    calibration_target: Target | None,
    published: dict[str, Any] | None,
) -> dict[str, Any]:
    """One row under every calibration of its family at its default precision: its throughput
    at each setting, and at the default calibration its step's terms."""
    transfers = program["transfers"]
    precision = precisions(speed, row, target)[0]
    # A target without the calibration's precision (an H200 has no FP4) keeps its share of the peak:
    # how well the program uses the tensor cores, at the precision this target has.
    source_precision = precisions(speed, row, calibration_target)[0] if calibration_target else precision
    by_calibration: dict[str, list[float]] = {}
    central_rates: dict[str, float] = {}
    for calibrated_on, calibration in (
        (family_calibrations.get(source_precision) or {}).items() if calibration_target else ()
    ):
        found = rates_from(calibration, target, calibration_target, precision, speed)
        if found and found[0]:
            by_calibration[calibrated_on] = [
                throughput(program, rates(target, rate, setting, precision, speed)) if rate else None
                for rate, setting in zip(found, settings(speed), strict=True)
            ]
            central_rates[calibrated_on] = found[0]
    default = speed["calibration"]["rows"].get(row.family)
    calibrated_on = default if default in by_calibration else next(iter(by_calibration), None)
    breakdown = implied = None
    published_value = (published or {}).get("tflops")
    on_calibration_target = calibration_target is not None and target.name == calibration_target.name
    if calibrated_on:
        central = rates(target, central_rates[calibrated_on], settings(speed)[0], precision, speed)
        breakdown = step_model.breakdown(replayed(program, central), program["entry"], central)
        copies_host = bool(transfers["host_bytes"]["to_host"])
        if published_value and on_calibration_target and copies_host and calibrated_on != row.id:
            implied = implied_host_gb_s(program, central, published_value)
    published_step_s = (
        program["model_flops"] / (published_value * 1e12) if published_value and on_calibration_target else None
    )
    copies = transfers["host_copies"]
    return {
        "row": row.id,
        "family": row.family,
        "placement_kind": placement_kind(row),
        "status": "ok",
        "message": None,
        "precision": precision,
        "calibration_precision": source_precision,
        "flops": flops_record(program),
        "unknown_trip_counts": program["unknown_loops"],
        "memory_bytes": transfers["memory_bytes"],
        "host_bytes": transfers["host_bytes"],
        "host_copies": {
            "asynchronous": sum(1 for c in copies if c["asynchronous"]),
            "synchronous": sum(1 for c in copies if not c["asynchronous"]),
            "flops_between_async": sorted({c["flops_between"] for c in copies if c["asynchronous"]}),
            "by_direction": {side: copy_summary([c for c in copies if c["direction"] == side]) for side in SIDES},
        },
        "collectives": transfers["collectives"],
        "clones": program["clones"],
        "rematerialization": program["rematerialization"],
        "network": network(program, target, published_step_s),
        "published_tflops": published_value if on_calibration_target else None,
        "published_sources": (published or {}).get("sources") if on_calibration_target else None,
        "calibrated_on": calibrated_on,
        "tflops_per_device": by_calibration.get(calibrated_on) if calibrated_on else None,
        "by_calibration": by_calibration,
        "breakdown": breakdown,
        "implied_host_gb_s_per_direction": implied,
    }


def predict_target(
    rows: list[Row],
    target: Target,
    compiled: list[dict[str, Any]],
    speed: dict[str, Any],
    calibration_target: Target | None,
    source_prediction: dict[str, Any] | None,
    claims_file: str | Path = CLAIMS_FILE,
) -> dict[str, Any]:
    """Every compiled row of one target (its program read from the cache). A row compiled under an
    alternative assumption (`<row>@<variant>`) stands for its row: the prediction of a variant."""
    by_id = {row.id: row for row in rows}
    shape = network_shape(target, speed)
    programs, failed = {}, {}
    for result in compiled:
        row_id = result["row"].split(SEPARATOR)[0]
        if row_id not in by_id:
            continue
        if result["status"] != "ok":
            failed[row_id] = ("error", f"no compiled program: {result.get('message')}", result.get("failure"))
        elif not result["fits"]:  # no step time for a program that does not fit
            failed[row_id] = ("oom", f"out of memory as compiled ({-result['margin_gib']:.1f} GiB over)", None)
        else:
            programs[row_id] = read_program(result, shape)
    published = published_throughputs(by_id, speed, claims_file)
    return predict_programs(by_id, programs, failed, target, speed, calibration_target, source_prediction, published)


def predict_programs(
    rows: dict[str, Row],
    programs: dict[str, dict[str, Any]],
    failed: dict[str, tuple[str, str, dict[str, Any] | None]],  # status, message, the compile's failure
    target: Target,
    speed: dict[str, Any],
    calibration_target: Target | None,
    source_prediction: dict[str, Any] | None,
    published: dict[str, dict[str, dict[str, Any]]],
) -> dict[str, Any]:
    """Calibrated (and its error measured) here when this is the calibration target, else from the
    calibration target's own prediction (`source_prediction`)."""
    error = ablation = by_precision = ruled_out = None
    if calibration_target and target.name == calibration_target.name:
        calibration, uncalibrated = calibrations(rows, programs, target, speed, published)
        error, ablation, by_precision, ruled_out = error_tables(rows, programs, target, speed, published)
    else:
        source = source_prediction or {}
        calibration, uncalibrated = source.get("calibration", {}), source.get("uncalibrated", {})
        error = source.get("model_error")
    refused = {row_id: other_precision(rows[row_id], target, speed, calibration_target) for row_id in programs}
    predicted = [
        predict_row(
            rows[row_id],
            program,
            target,
            speed,
            calibration.get(rows[row_id].family, {}),
            calibration_target,
            published.get(rows[row_id].family, {}).get(row_id),
        )
        for row_id, program in programs.items()
        if not refused[row_id]
    ]
    predicted += [
        {"row": row_id, "family": rows[row_id].family, "status": "refused", "message": message}
        for row_id, message in refused.items()
        if message
    ]
    for row_id, (status, message, cause) in failed.items():
        failed_row = {"row": row_id, "family": rows[row_id].family, "status": status, "message": message}
        predicted.append(failed_row | {"failure": cause})
    return {
        "target": target.name,
        "evidence": "predicted",
        "status": "ok",
        "message": None,
        "calibrated_by": calibration_target.name if calibration_target else None,
        "calibration": calibration,
        "uncalibrated": uncalibrated,
        "model_error": error,
        "ablation": ablation,
        "by_precision": by_precision,
        "ruled_out_precisions": ruled_out,
        "settings": {
            "link_level": [setting.level for setting in settings(speed)],
            "network_end": [setting.end for setting in settings(speed)],
            "overlap": [setting.overlap for setting in settings(speed)],
            "order": (
                "one value per setting: each level of the links' efficiency (central, low, high) at each network end"
                " (ring, then floor), for each schedule (as XLA scheduled it, then the ideal overlap);"
                " central first"
            ),
        },
        "assumptions": [
            efficiency_sentence(target, speed),
            speed["link_efficiency"]["reason"],
            speed["network"]["reason"],
            *([speed["overlap"]["reason"]] if "overlap" in speed else []),
            *speed["assumptions"],
        ],
        "rows": predicted,
        "gains": gains(predicted, speed),
        "cross_checks": cross_checks(rows, predicted, target, speed),
    }


def projection_flops(row: Row, target: Target) -> int:
    """Forward FLOPs of the projections that produce the row's offloaded tensors, per device and
    step: 2 x output elements x model width, over every layer (the tensors' bytes from the analytic accounting)."""
    overrides = compile_overrides(row, target)
    config = {**model_config(row.model), **overrides}
    bytes_of = accounting.row_accounting(row, overrides)
    width = config["base_emb_dim"]
    total = 0
    for tensor in bytes_of["tensors"].values():
        if tensor["placement"] == "offload":
            for kind, size in tensor["bytes_per_layer"].items():
                total += 2 * size // accounting.DTYPE_BYTES[row.dtype] * width * bytes_of["layers"][kind]
    return total


def predicted_pairs(
    predicted: list[dict[str, Any]], speed: dict[str, Any], key: str, first: str, second: str
) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(pair, its first row's prediction, its second's) for each pair of experiments/speed.yaml's
    `key` whose two rows were both predicted."""
    by_row = {row["row"]: row for row in predicted if row["status"] == "ok"}
    return [
        (pair, by_row[pair[first]], by_row[pair[second]])
        for pair in speed.get(key, [])
        if pair[first] in by_row and pair[second] in by_row
    ]


def cross_checks(
    rows: dict[str, Row], predicted: list[dict[str, Any]], target: Target, speed: dict[str, Any]
) -> list[dict[str, Any]]:
    """Differences known by construction: the recompute one row has over another (experiments/speed.yaml),
    against the forward projections of the tensors the other offloads instead."""
    found = []
    for pair, more, less in predicted_pairs(predicted, speed, "cross_checks", "recomputes", "offloads"):
        expected = projection_flops(rows[pair["offloads"]], target)
        labelled = more["flops"]["rematted"] - less["flops"]["rematted"]
        counted = more["flops"]["counted"] - less["flops"]["counted"]
        found.append(
            {
                **pair,
                "expected_flops": expected,
                "labelled_recompute_difference": labelled,
                "counted_difference": counted,
                "labelled_matches": abs(labelled - expected) <= 0.01 * expected,
            }
        )
    return found


def gains(predicted: list[dict[str, Any]], speed: dict[str, Any]) -> list[dict[str, Any]]:
    """Each offload row's predicted gain over the row it replaces (experiments/speed.yaml, gains),
    setting by setting, both at their default calibration."""
    found = []
    for pair, offload, against in predicted_pairs(predicted, speed, "gains", "offload", "against"):
        if not offload["tflops_per_device"] or not against["tflops_per_device"]:
            continue
        pairs = zip(offload["tflops_per_device"], against["tflops_per_device"], strict=True)
        values = [a / b - 1 for a, b in pairs if a and b]
        found.append({**pair, "by": "calibrated", "gain": values[0], "low": min(values), "high": max(values)})
    return found


def write_prediction(
    rows: list[Row],
    target: Target,
    compiled_files: list[Path],
    out: Path,
    speed_file: str | Path = SPEED_FILE,
    calibration_target: Target | None = None,
    source_file: Path | None = None,
    claims_file: str | Path = CLAIMS_FILE,
) -> dict[str, Any]:
    speed = load_speed(speed_file)
    compiled = [read_result(path, "compile") for path in compiled_files]
    source = read_result(source_file, "predicted") if source_file else None
    prediction = predict_target(rows, target, compiled, speed, calibration_target, source, claims_file)
    return write_result(out, "predicted", prediction)
