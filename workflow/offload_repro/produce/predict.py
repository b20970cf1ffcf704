"""Predicted evidence: each row's step time and TFLOPs/s/device on a GPU target, from its compiled
program (FLOPs counted with recompute, host copies, collectives, the schedule) replayed by the
step-time model (`produce.step_model`) at the target's cited rates.

The model has one free parameter, the effective compute rate, calibrated per model on one
published row of the source's hardware (experiments/speed.yaml); what-if targets keep its share
of their own peak. Every prediction is made at the central settings and at each combination of
the stated uncertainties (link efficiency; for the uncalibrated prior also the efficiency), in
one fixed order, so that a claim over several rows is evaluated setting by setting.
"""

from __future__ import annotations

import gzip
import itertools
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from offload_repro.core import accounting
from offload_repro.core.data import DataError, Row, Target, validate
from offload_repro.core.files import read_yaml
from offload_repro.core.maxtext_configs import model_config
from offload_repro.core.memory import GB
from offload_repro.core.results import read_result, write_result
from offload_repro.core.variants import SEPARATOR
from offload_repro.produce import hlo_program, model_flops, step_model
from offload_repro.produce.program import compile_overrides, hlo_path

SPEED_FILE = "experiments/speed.yaml"
READS = ("experiments/speed.yaml",)  # SPEED_FILE, as a literal the plan reads
SIDES = ("to_host", "from_host")


def load_speed(path: str | Path = SPEED_FILE) -> dict[str, Any]:
    data = read_yaml(path)
    validate(data, "speed", path)
    return data


def settings(spec: dict[str, Any], key: str) -> list[float]:
    """Central first, then low and high: the order every prediction list follows."""
    return [spec[key]["central"], spec[key]["low"], spec[key]["high"]]


def read_program(compiled: dict[str, Any]) -> dict[str, Any]:
    """What the step-time model needs from the row's compiled program."""
    program_file = (compiled.get("program") or {}).get("file")
    if compiled["status"] != "ok" or not program_file:
        raise DataError(f"row {compiled['row']}: no compiled program ({compiled.get('message')})")
    path = hlo_path(Path(program_file))
    if not path.exists():
        raise DataError(f"{path}: the compiled program's HLO is missing; delete {program_file} to compile it again")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        computations = hlo_program.parse(handle.read())
    flops, unknown_loops = hlo_program.count_flops(computations)
    events = hlo_program.schedule(computations)
    return {
        "computations": computations,
        "events": events,
        "entry": hlo_program.entry_name(computations),
        "flops": flops,
        "unknown_loops": unknown_loops,
        "transfers": hlo_program.transfers(computations, events),
        "model_flops": compiled["model_tflops_per_device_per_step"] * 1e12,
        "model_components": compiled.get("model_tflops_components"),  # absent before it was recorded
    }


def rates(target: Target, flops_per_s: float, link_efficiency: float) -> step_model.Rates:
    host = target.host_link_gb_s_per_direction
    collective = target.link_gb_s_per_direction("collective_link")
    return step_model.Rates(
        flops_per_s,
        host * GB * link_efficiency if host else math.inf,
        host * GB * link_efficiency if host else math.inf,
        collective * GB * link_efficiency if collective else math.inf,
    )


def peak_flops(target: Target, row: Row) -> float | None:
    tflops = (target.spec["hardware"].get("peak_dense_tflops") or {}).get(row.dtype)
    return tflops * 1e12 if tflops else None


def throughput(program: dict[str, Any], target: Target, flops_per_s: float, link: float) -> float:
    step = step_model.step_seconds(program["events"], program["entry"], rates(target, flops_per_s, link))
    return program["model_flops"] / step / 1e12


def calibrate(
    rows: dict[str, Row], programs: dict[str, dict[str, Any]], target: Target, speed: dict[str, Any]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, str]]]:
    """Per model family on the calibration target: the effective compute rate at each link setting
    that makes the calibration row's prediction its published throughput; and the families whose
    calibration row cannot reach it at any rate (its transfers alone take longer), with why."""
    found, impossible = {}, {}
    for family, row_id in speed["calibration"]["rows"].items():
        row, program = rows.get(row_id), programs.get(row_id)
        published = row.published.get("tflops_per_device") if row else None
        if row is None or program is None or not published:
            continue
        peak = peak_flops(target, row)
        by_link = []
        for link in settings(speed, "link_efficiency"):
            try:
                rate = step_model.calibrate(
                    program["events"],
                    program["entry"],
                    program["model_flops"],
                    published * 1e12,
                    rates(target, 1.0, link),
                )
            except ValueError as err:
                impossible[family] = {"row": row_id, "reason": f"{row_id} at link efficiency {link}: {err}"}
                break
            by_link.append(
                {
                    "link_efficiency": link,
                    "effective_tflops": rate / 1e12,
                    "share_of_peak": rate / peak if peak else None,
                }
            )
        if family not in impossible:
            found[family] = {"row": row_id, "target": target.name, "published_tflops": published, "by_link": by_link}
    return found, impossible


def network(program: dict[str, Any], target: Target, published_step_s: float | None) -> dict[str, Any] | None:
    """The traffic between NVLink domains that the step-time model does not charge: per step, the
    bytes the most exposed device exchanges with other domains, the time they take at the cited
    network bandwidth, and the bandwidth the published step time would need to carry them."""
    hardware = target.spec["hardware"]
    per_domain, nodes = hardware.get("nvlink_domain_nodes"), hardware.get("nodes")
    bandwidth = target.link_gb_s_per_direction("network_link")
    if not per_domain or not nodes or not bandwidth or nodes <= per_domain:
        return None  # one NVLink domain: every collective stays on NVLink
    by_kind = hlo_program.cross_domain_bytes(program["computations"], per_domain * hardware["gpus_per_node"])
    total = sum(by_kind.values())
    return {
        "domains": math.ceil(nodes / per_domain),
        "bytes_per_step": by_kind,
        "total_bytes": total,
        "link_gb_s_per_direction": bandwidth,
        "seconds_at_link": total / (bandwidth * GB),
        "published_step_s": published_step_s,
        "needed_gb_s": total / published_step_s / GB if published_step_s and total else None,
    }


def implied_host_gb_s(program: dict[str, Any], target: Target, rate: float, published: float) -> float | None:
    """The host-link bandwidth per direction at which the calibrated prediction equals `published`;
    None when none does (the row is slower than its copies alone explain, or faster than no copies)."""

    def predicted(gb_s: float) -> float:
        at = replace(rates(target, rate, 1.0), to_host_bytes_per_s=gb_s * GB, from_host_bytes_per_s=gb_s * GB)
        return program["model_flops"] / step_model.step_seconds(program["events"], program["entry"], at) / 1e12

    low, high = 1.0, 1e6
    if not predicted(low) <= published <= predicted(high):
        return None
    for _ in range(80):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if predicted(middle) < published else (low, middle)
    return math.sqrt(low * high)


def model_components(tflops: dict[str, float] | None) -> dict[str, float | None]:
    """MaxText's model FLOPs per component (`model_ffn`, ...), in FLOPs like the rest of `flops`;
    None for each where the compile did not split them."""
    return {f"model_{name}": tflops[name] * 1e12 if tflops else None for name in model_flops.COMPONENTS}


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


def predict_row(
    row: Row,
    program: dict[str, Any],
    target: Target,
    speed: dict[str, Any],
    calibration: dict[str, Any] | None,
    calibration_target: Target | None,
) -> dict[str, Any]:
    flops, transfers = program["flops"], program["transfers"]
    model = program["model_flops"]
    spent = flops.total - flops.unspent
    links = settings(speed, "link_efficiency")
    peak = peak_flops(target, row)
    prior = None
    if peak:
        combos = list(itertools.product(settings(speed, "prior_efficiency"), links))
        prior = [throughput(program, target, efficiency * peak, link) for efficiency, link in combos]
    calibrated, central_rate = None, None
    if calibration and calibration_target:
        rates_by_link = []
        for entry in calibration["by_link"]:
            if target.name == calibration_target.name:
                rates_by_link.append(entry["effective_tflops"] * 1e12)
            elif peak and entry["share_of_peak"]:
                rates_by_link.append(entry["share_of_peak"] * peak)
        if len(rates_by_link) == len(links):
            calibrated = [
                throughput(program, target, rate, link) for rate, link in zip(rates_by_link, links, strict=True)
            ]
            central_rate = rates_by_link[0]
    breakdown = None
    if central_rate or peak:
        flops_per_s = central_rate or speed["prior_efficiency"]["central"] * peak
        breakdown = step_model.breakdown(program["events"], program["entry"], rates(target, flops_per_s, links[0]))
    copies = transfers["host_copies"]
    published = row.published.get("tflops_per_device")
    implied = None
    on_calibration_target = calibration_target is not None and target.name == calibration_target.name
    copies_host = bool(transfers["host_bytes"]["to_host"])
    published_step_s = model / (published * 1e12) if published and on_calibration_target else None
    if central_rate and published and on_calibration_target and copies_host and calibration["row"] != row.id:
        implied = implied_host_gb_s(program, target, central_rate, published)
    return {
        "row": row.id,
        "family": row.family,
        "status": "ok",
        "message": None,
        "flops": {
            "model": model,
            "counted": flops.total,
            "gemm": flops.gemm,
            "attention": flops.attention,
            "rematted": flops.rematted,
            "unspent": flops.unspent,
            "unlabelled_gemm": flops.unlabelled_gemm,
            "unlabelled_attention": flops.unlabelled_attention,
            "recompute": spent - model,
            "recompute_share": (spent - model) / spent if spent else None,
            **model_components(program.get("model_components")),
        },
        "unknown_trip_counts": program["unknown_loops"],
        "host_bytes": transfers["host_bytes"],
        "host_copies": {
            "asynchronous": sum(1 for c in copies if c["asynchronous"]),
            "synchronous": sum(1 for c in copies if not c["asynchronous"]),
            "flops_between_async": sorted({c["flops_between"] for c in copies if c["asynchronous"]}),
            "by_direction": {side: copy_summary([c for c in copies if c["direction"] == side]) for side in SIDES},
        },
        "collectives": transfers["collectives"],
        "network": network(program, target, published_step_s),
        "calibrated_on": calibration["row"] if calibrated else None,
        "tflops_per_device": calibrated,
        "tflops_per_device_prior": prior,
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
) -> dict[str, Any]:
    """Every compiled row of one target (its program read from the cache). A row compiled under an
    alternative assumption (`<row>@<variant>`) stands for its row: the prediction of a variant."""
    by_id = {row.id: row for row in rows}
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
            programs[row_id] = read_program(result)
    return predict_programs(by_id, programs, failed, target, speed, calibration_target, source_prediction)


def predict_programs(
    rows: dict[str, Row],
    programs: dict[str, dict[str, Any]],
    failed: dict[str, tuple[str, str, dict[str, Any] | None]],  # status, message, the compile's failure
    target: Target,
    speed: dict[str, Any],
    calibration_target: Target | None,
    source_prediction: dict[str, Any] | None,
) -> dict[str, Any]:
    """Calibrated here when this is the calibration target, else from the calibration target's
    own prediction (`source_prediction`), else the prior only."""
    uncalibrated: dict[str, dict[str, str]] = {}
    if calibration_target and target.name == calibration_target.name:
        calibration, uncalibrated = calibrate(rows, programs, target, speed)
    else:
        calibration = (source_prediction or {}).get("calibration", {})
        uncalibrated = (source_prediction or {}).get("uncalibrated", {})
    predicted = [
        predict_row(rows[row_id], program, target, speed, calibration.get(rows[row_id].family), calibration_target)
        for row_id, program in programs.items()
    ]
    for row_id, (status, message, cause) in failed.items():
        failed_row = {"row": row_id, "family": rows[row_id].family, "status": status, "message": message}
        predicted.append(failed_row | {"failure": cause})
    return {
        "target": target.name,
        "evidence": "predicted",
        "status": "ok",
        "message": None,
        "calibration": calibration,
        "uncalibrated": uncalibrated,
        "settings": {
            "link_efficiency": settings(speed, "link_efficiency"),
            "prior_efficiency": settings(speed, "prior_efficiency"),
            "order": "calibrated: one value per link efficiency; prior: efficiency x link efficiency; central first",
        },
        "assumptions": [speed["link_efficiency"]["reason"], speed["prior_efficiency"]["reason"], *speed["assumptions"]],
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
    setting by setting: calibrated where both rows are, else from the prior."""
    found = []
    for pair, offload, against in predicted_pairs(predicted, speed, "gains", "offload", "against"):
        metric = "tflops_per_device" if offload["tflops_per_device"] and against["tflops_per_device"] else None
        metric = metric or "tflops_per_device_prior"
        if not offload[metric] or not against[metric]:
            continue
        values = [a / b - 1 for a, b in zip(offload[metric], against[metric], strict=True)]
        found.append(
            {
                **pair,
                "by": "calibrated" if metric == "tflops_per_device" else "prior",
                "gain": values[0],
                "low": min(values),
                "high": max(values),
            }
        )
    return found


def write_prediction(
    rows: list[Row],
    target: Target,
    compiled_files: list[Path],
    out: Path,
    speed_file: str | Path = SPEED_FILE,
    calibration_target: Target | None = None,
    source_file: Path | None = None,
) -> dict[str, Any]:
    speed = load_speed(speed_file)
    compiled = [read_result(path, "compile") for path in compiled_files]
    source = read_result(source_file, "predicted") if source_file else None
    return write_result(out, "predicted", predict_target(rows, target, compiled, speed, calibration_target, source))
