"""Each result kind's observer: one result file -> the observations the evidence table holds.

Producers record only what they measured, compiled or computed; what those results are expected
to be (a compiled program's host buffers against the analytic bytes of the tensors it offloads)
and what XLA's warnings mean are worked out here, on the judging side, so that an edit of that
arithmetic re-judges without compiling again.
"""

from __future__ import annotations

import re
from typing import Any

from offload_repro.core import memory
from offload_repro.core.accounting import compiled_accounting
from offload_repro.core.error_band import widened
from offload_repro.core.failure import hbm_oom
from offload_repro.core.measured_elsewhere import load_validation
from offload_repro.core.observation import Observation, Observer
from offload_repro.core.validation_record import carry_band
from offload_repro.judge import metric_names as names

# A run's status -> whether the row fitted on the device (an error says nothing about fitting).
OUTCOME_OF_STATUS = {"ok": "fits", "oom": "oom"}
REDUCED_TO = re.compile(r"only reduced to [\d.]+GiB \((\d+) bytes\)")


def run_observations(result: dict[str, Any], source: str) -> list[Observation]:
    """A run's observations: how it ended, throughput, memory, losses per step, copy overlap."""
    seen = Observer(result, source, "measured", result["row"], result["target"])
    seen.status_line()
    seen.add(names.OUTCOME, OUTCOME_OF_STATUS.get(result["status"]))
    spreads = result.get("spread") or {}  # medians of repeats carry their lowest and highest
    for metric, unit in (
        (names.TFLOPS, "TFLOPs/s/device"),
        (names.STEP_TIME_S, "s"),
        ("tokens_per_s_per_device", "tokens/s/device"),
    ):
        seen.add(metric, result.get(metric), unit, spread=spreads.get(metric))
    platform = result["provenance"].get("platform")
    peak = memory.runtime_peak_bytes(result.get("runtime_memory"), platform) or result.get("nvml_peak_used_bytes")
    seen.add(names.DEVICE_GIB, memory.gib(peak), "GiB")
    seen.add("host_peak_rss_gib", memory.gib(result.get("host_peak_rss_bytes")), "GiB")
    losses = result.get("losses") or []
    for step, loss in enumerate(losses):
        seen.add("loss", loss, at=step)
    if losses:
        seen.add("final_loss", losses[-1])
    overlap = result.get("overlap") or {}
    seen.add("host_copies", overlap.get("host_copies"))
    seen.add("copy_s_per_step", overlap.get("copy_s_per_step"), "s")
    seen.add("compute_s_per_step", overlap.get("compute_s_per_step"), "s")
    seen.add("copy_hidden_fraction", overlap.get("hidden_fraction"), "fraction")
    seen.add("exposed_copy_s_per_step", overlap.get("exposed_copy_s_per_step"), "s")
    # a TPU profile: each copy's time from its start to its done (in flight), the share of that time
    # the core computed (bounding the hidden share from above), and each direction's own
    seen.add("copy_in_flight_s_per_step", overlap.get("in_flight_s_per_step"), "s")
    seen.add("copy_hidden_fraction_at_most", overlap.get("hidden_fraction_at_most"), "fraction")
    for side, copies in (overlap.get("by_direction") or {}).items():
        seen.add(names.copy_side(side, "copy_gb_per_step"), copies["bytes_per_step"] / 1e9, "GB")
        seen.add(names.copy_side(side, "copy_in_flight_s_per_step"), copies["in_flight_s_per_step"], "s")
        seen.add(names.copy_side(side, "copy_exposed_s_per_step"), copies["exposed_s_per_step"], "s")
    seen.add("wall_time_s", result["provenance"].get("wall_time_s"), "s")
    # the program that ran, as XLA compiled it on the accelerator: compiled evidence of this target,
    # beside the run (XLA:CPU's analysis of a scaled-down row says nothing of any accelerator)
    if platform in (None, "cpu"):
        return seen.observations
    program = Observer(result, source, "compiled", result["row"], result["target"])
    compiled = result.get("compiled_memory")
    program_peak = memory.program_peak_bytes(compiled, platform)
    program.add(names.PROGRAM_DEVICE_GIB, memory.gib(program_peak), "GiB")
    if peak and program_peak and result.get("runtime_memory"):  # the runtime's own counters, not NVML's
        seen.add(names.RUNTIME_OVER_PROGRAM, peak / program_peak - 1, "fraction")
    program.add(names.PROGRAM_HOST_GIB, memory.gib(memory.host_bytes(compiled)), "GiB")
    if refused := hbm_oom(result.get("message") or ""):  # XLA:TPU refuses at compile time, naming the need
        program.add(names.REFUSED_NEEDING_GIB, refused["required_gib"], "GiB", message=result["message"])
    return seen.observations + program.observations


def warning_meaning(text: str, device: int, host: int) -> str:
    """What one of XLA's rematerialisation warnings means for the program it was printed for.

    The pass counts buffers that are about to be offloaded as device memory, so on an offload
    row its 'only reduced to' is device + host, not a contradiction of the device figure."""
    device_gib, host_gib = memory.gib(device), memory.gib(host)
    reduced = REDUCED_TO.search(text)
    if reduced is None:
        return "XLA could not fit the program under its own limit; the memory analysis is what is judged."
    reduced_gib = memory.gib(int(reduced.group(1)))
    if memory.remat_warning_explained(reduced_gib, device_gib, host_gib):
        return (
            f"Not a contradiction: XLA's rematerialisation pass counts the {host_gib:.2f} GiB about to be "
            f"offloaded as device memory ({device_gib:.2f} device + {host_gib:.2f} host = "
            f"{device_gib + host_gib:.2f} GiB); after offloading the device holds {device_gib:.2f} GiB."
        )
    if abs(reduced_gib - device_gib) <= 0.01 * reduced_gib:
        return f"The program needs {device_gib:.2f} GiB per device: XLA could not rematerialise it smaller."
    return (
        f"Reported for one computation while scheduling ({reduced_gib:.2f} GiB); the program's final memory "
        f"analysis ({device_gib:.2f} GiB device, {host_gib:.2f} GiB host) is what fits / out of memory is "
        "judged on."
    )


def moe_dispatch(result: dict[str, Any]) -> str | None:
    """How a compiled MoE program routes tokens to experts, in words; None for a dense model."""
    overrides = result["maxtext_overrides"]
    if "sparse_matmul" not in overrides:  # set for MoE families only (a target's compile.families)
        return None
    if not overrides["sparse_matmul"]:
        return f"dense dispatch, capacity factor {overrides['capacity_factor']}"
    matmul = {"tiled": "a grouped matmul over 128-token tiles", "xla": "jax.lax.ragged_dot as XLA lowers it"}
    return f"sorted, dropless; {matmul[result.get('ragged_dot', 'xla')]}"


def compile_observations(result: dict[str, Any], source: str) -> list[Observation]:
    """A compile's observations: fits or not, device and host memory, the offload against the
    analytic bytes of the row as compiled, the program, XLA's warnings with their meaning."""
    seen = Observer(result, source, "compiled", result["row"], result["target"])
    seen.status_line()
    seen.add(names.CAPACITY_GIB, memory.gib(result["capacity_bytes"]), "GiB")
    seen.add("compile_s", result.get("compile_seconds"), "s")
    seen.add("compile_peak_rss_gib", memory.gib(result.get("peak_rss_bytes")), "GiB")
    share = (result.get("provenance") or {}).get("allocator_memory_fraction")  # absent before it was recorded
    seen.add("allocator_share", share)
    # what the row must fit within, and XLA planned it within: the allocator's share of the GPU
    limit = result.get("allocator_limit_bytes") or (result["capacity_bytes"] * share if share else None)
    seen.add(names.ALLOCATOR_LIMIT_GIB, memory.gib(limit), "GiB")
    seen.add("moe_dispatch", moe_dispatch(result))
    if result["status"] != "ok":
        return seen.observations
    seen.add(names.OUTCOME, "fits" if result["fits"] else "oom")
    seen.add(names.DEVICE_GIB, memory.gib(result["device_bytes"]), "GiB")
    seen.add(names.HOST_GIB, memory.gib(result["host_bytes"]), "GiB")
    seen.add(names.MARGIN_GIB, result["margin_gib"], "GiB")
    hlo = result["hlo"]
    expected = compiled_accounting(result["maxtext_overrides"])
    offloaded = [t for t in expected["tensors"].values() if t["placement"] == "offload"]
    seen.add("host_buffers", hlo["host_buffers"])
    seen.add("expected_host_buffers", sum(len(t["bytes_per_layer"]) for t in offloaded))
    seen.add("host_buffer_gib", memory.gib(hlo["host_buffer_bytes"]), "GiB")
    seen.add("expected_host_buffer_gib", memory.gib(expected["offloaded_bytes_per_step"]), "GiB")
    seen.add("async_pairs", hlo["async_pairs_total"])
    seen.add(names.HLO_SHA256, result["hlo_sha256"])
    seen.add("host_capacity_gib", memory.gib(result.get("host_capacity_bytes")), "GiB")
    seen.add(names.HOST_FITS, result.get("host_fits"))
    seen.add("model_tflops_per_step", result.get("model_tflops_per_device_per_step"), "TFLOP/device")
    seen.add("xla_tflops_per_step", (result.get("cost") or {}).get("flops", 0) / 1e12 or None, "TFLOP/device")
    for text in dict.fromkeys(result["xla_memory_warnings"]):  # XLA repeats a warning per pass
        meaning = warning_meaning(text, result["device_bytes"], result["host_bytes"])
        seen.add("xla_memory_warning", text, message=meaning)
    return seen.observations


def analytic_observations(result: dict[str, Any], source: str) -> list[Observation]:
    """Per row: the bytes it offloads and saves on device, per step and per layer of each tensor."""
    observations = []
    for accounting in result["rows"]:
        seen = Observer(result, source, "analytic", accounting["row"], None)
        seen.add(names.OFFLOADED_GIB, memory.gib(accounting["offloaded_bytes_per_step"]), "GiB")
        seen.add(names.DEVICE_SAVED_GIB, memory.gib(accounting["device_saved_bytes_per_step"]), "GiB")
        seen.add("offloaded_mib_per_layer", memory.mib(accounting["offloaded_bytes_per_layer"]), "MiB")
        for tensor, sizes in accounting["tensors"].items():
            per_layer = sizes["bytes_per_layer"]
            bytes_per_layer = per_layer["moe" if "moe" in per_layer else "dense"]
            seen.add(names.tensor_mib_per_layer(tensor), memory.mib(bytes_per_layer), "MiB")
        observations += seen.observations
    return observations


def probe_observations(result: dict[str, Any], source: str) -> list[Observation]:
    """Bandwidth per transfer size (`at` = bytes), each direction, and its share of the link's limit."""
    seen = Observer(result, source, "measured", None, result["target"])
    seen.status_line()
    seen.add("link_limit_gb_s", result.get("link_limit_gb_s_per_direction"), "GB/s")
    for transfer in result["transfers"]:
        for direction in ("d2h", "h2d"):
            seen.add(f"{direction}_gb_s", transfer[f"{direction}_gb_s"], "GB/s", at=transfer["bytes"])
            seen.add(f"{direction}_of_limit", transfer.get(f"{direction}_of_limit"), "fraction", at=transfer["bytes"])
    return seen.observations


def frontier_observations(result: dict[str, Any], source: str) -> list[Observation]:
    """A placement policy's capacity frontier: its largest fitting micro batch, and every compiled
    point (`at` = micro batch)."""
    seen = Observer(result, source, "compiled", None, result["target"], policy=result["policy"])
    seen.status_line()
    largest = result["largest_fitting_micro_batch"]
    if result["status"] == "ok":
        message = None if largest else "not even the smallest micro batch fits"
        if largest == result["search"]["max"]:
            message = "fits the largest micro batch searched: the frontier lies at or beyond it"
        seen.add("largest_fitting_micro_batch", largest or 0, "micro batch", message=message)
    seen.add("policy_published", result["published"])
    for point in result["points"]:
        if point["status"] == "ok":
            seen.add("frontier_device_gib", point["device_gib"], "GiB", at=point["micro_batch"])
            seen.add("frontier_fits", point["fits"], at=point["micro_batch"])
    return seen.observations


def budget_observations(result: dict[str, Any], source: str) -> list[Observation]:
    """Per row and target: the time its host copies take per step, and their share of the step."""
    observations = []
    for line in result["transfers"]:
        seen = Observer(result, source, "compiled", line["row"], line["target"])
        seen.add("whatif_copy_s_per_step", line["copy_s_per_step"], "s")
        seen.add("whatif_step_s", line["step_s"], "s")
        seen.add("whatif_copy_share", line["copy_share_of_step"], "fraction", message=line["why_no_share"])
        seen.add("whatif_link_gb_s", line["link_gb_s_per_direction"], "GB/s")
        observations += seen.observations
    for line in result["recompute"]:
        seen = Observer(result, source, "compiled", line["row"], line["target"])
        seen.add("xla_tflops_per_step", line["xla_tflops_per_step"], "TFLOP/device")
        observations += seen.observations
    return observations


def flop_observations(seen: Observer, flops: dict[str, Any]) -> None:
    """MaxText's model FLOPs per component (`model_<component>`, where the compile split them) and,
    kind by kind, the counted FLOPs that carry neither label (JAX recompute, MoE dispatch) against
    the model's: its weight FLOPs for the GEMMs, its attention for cuDNN's; TFLOP per device per step."""
    model = {name: value / 1e12 for name, value in flops.items() if name.startswith("model_") and value is not None}
    for name, value in model.items():
        seen.add(f"{name}_tflops_per_step", value, "TFLOP/device")  # model_<component>: names.model_component
    unlabelled = {kind: flops.get(f"unlabelled_{kind}") for kind in ("gemm", "attention")}
    for kind, value in unlabelled.items():
        seen.add(f"unlabelled_{kind}_tflops_per_step", None if value is None else value / 1e12, "TFLOP/device")
    if "model_attention" not in model or None in unlabelled.values():
        return
    weights = flops["model"] / 1e12 - model["model_attention"]
    seen.add("model_weights_tflops_per_step", weights, "TFLOP/device")
    # to the GFLOP: a difference of two large counts that agree carries float noise below it
    beyond = {"gemm": weights, "attention": model["model_attention"]}
    for kind, against in beyond.items():
        seen.add(f"{kind}_beyond_model_tflops_per_step", round(unlabelled[kind] / 1e12 - against, 3), "TFLOP/device")


def copy_observations(seen: Observer, by_direction: dict[str, dict[str, Any]]) -> None:
    """Per direction with host copies: how many, how many asynchronous, and the compute their
    start / done pairs span (`<direction>_...`)."""
    for side, copies in by_direction.items():
        if not copies["copies"]:
            continue
        seen.add(names.copy_side(side, "copies"), copies["copies"])
        seen.add(names.copy_side(side, "copies_per_step"), copies["per_step"])
        seen.add(names.copy_side(side, "copies_asynchronous"), copies["asynchronous"])
        seen.add(names.copy_side(side, "copies_synchronous"), copies["synchronous"])
        seen.add(names.copy_side(side, "copies_spanning_nothing"), copies["asynchronous_spanning_nothing"])
        for end in ("low", "high"):
            spanned = copies[f"flops_spanned_{end}"]
            tflop = None if spanned is None else spanned / 1e12
            seen.add(names.copy_side(side, f"copy_span_{end}_tflop"), tflop, "TFLOP")


def clone_observations(seen: Observer, clones: dict[str, Any] | None, limit: dict[str, Any] | None) -> None:
    """What XLA's rematerialisation pass cloned, per kind, and its limit (absent from older predictions)."""
    for kind, counted in (clones or {}).items():
        seen.add(names.clone(kind, "instructions"), counted["instructions"])
        seen.add(names.clone(kind, "tflops_per_step"), counted["flops"] / 1e12, "TFLOP/device")
        seen.add(names.clone(kind, "hbm_gb_per_step"), counted["hbm_bytes"] / memory.GB, "GB")
        seen.add(names.clone(kind, "collective_gb_per_step"), counted["collective_bytes"] / memory.GB, "GB")
    if limit:
        seen.add("remat_pass", "off" if limit["met"] is None else "on")
        seen.add("remat_limit_met", limit["met"])
        for name in ("limit", "reached"):
            seen.add(f"remat_{name}_gib", memory.gib(limit[f"{name}_bytes"]), "GiB")  # gib(None) is None


def across_hardware_error(
    result: dict[str, Any], row: dict[str, Any], validation: dict[str, Any]
) -> tuple[float | None, str] | None:
    """The step-time error a row's prediction takes on hardware that was calibrated elsewhere: the
    largest error recorded for its family's calibration carried across hardware at the precision it
    was calibrated at (experiments/validation.yaml), and why; an error of None, and why, where that
    carry is unmeasured; None on the calibration's own hardware."""
    calibrated_by = result.get("calibrated_by")
    if not calibrated_by or calibrated_by == result["target"]:
        return None
    return carry_band(validation, row["family"], row.get("calibration_precision") or row["precision"])


def predicted_observations(result: dict[str, Any], source: str) -> list[Observation]:
    """Per row: the predicted throughput at its default calibration, lowest to highest over the stated
    uncertainties (the verdicts read every calibration and the leave-one-out errors from the result
    itself: judge/prediction_verdicts.py), the published throughput it is compared with and what the
    step is made of; per offload row, its predicted gain."""
    found: list[Observation] = []
    validation = load_validation()
    for row in result["rows"]:
        seen = Observer(row, source, "predicted", row["row"], result["target"])
        seen.status_line()
        if row["status"] != "ok":
            found += seen.observations
            continue
        central = (row.get("tflops_per_device") or [None])[0]
        present = [value for value in row.get("tflops_per_device") or [] if value is not None]
        if present:
            seen.add(names.TFLOPS, central, "TFLOPs/s/device", low=min(present), high=max(present))
        else:  # no calibration of its model reaches it: the result says why, row by row of the model
            family = {r["row"]: r.get("family") for r in result["rows"]}
            reasons = [
                entry["reason"]
                for entry in (result.get("uncalibrated") or {}).values()
                if family.get(entry["row"]) == row.get("family")
            ]
            if reasons:
                seen.add(names.UNPREDICTED_WHY, f"no rate of {row['family']} calibrates: " + "; ".join(reasons))
        across = across_hardware_error(result, row, validation)
        if across and present and across[0] is None:  # the carry is unmeasured: no band, and why
            seen.add(names.TFLOPS_ACROSS_HARDWARE, present[0], "TFLOPs/s/device", message=across[1])
        elif across and present:  # a measured step lies within the error of the carry: its band widens by it
            error, why = across
            low, high = min(present) * (1 - error), max(present) * (1 + error)
            seen.add(names.TFLOPS_ACROSS_HARDWARE, present[0], "TFLOPs/s/device", low=low, high=high, message=why)
            step = (row.get("breakdown") or {}).get(names.STEP_S)
            if step:
                low_s, high_s = widened(step, error)
                seen.add(names.STEP_S_ACROSS_HARDWARE, step, "s", low=low_s, high=high_s, message=why)
        seen.add(names.FAMILY, row["family"])
        seen.add(names.PLACEMENT_KIND, row.get("placement_kind"))
        seen.add(names.CALIBRATED_ON, row["calibrated_on"])
        published = row.get("published_tflops")
        derives_from = row.get("published_sources") or []
        seen.add(names.PUBLISHED_TFLOPS, published, "TFLOPs/s/device")
        seen.add(names.PUBLISHED_SOURCES, derives_from or None)
        if published is not None:
            # a throughput a published speedup implies: its sources name more than its own row
            seen.add(names.PUBLISHED_IMPLIED, len(derives_from) > 1)
            if central:
                seen.add(names.PREDICTED_OVER_PUBLISHED, central / published, "fraction")
        flops = row["flops"]
        for name in ("model", "counted", "rematted", "unspent", "recompute"):
            seen.add(f"{name}_tflops_per_step", flops[name] / 1e12, "TFLOP/device")
        seen.add("recompute_share", flops["recompute_share"])
        flop_observations(seen, flops)
        seen.add("host_copy_gib_per_step", memory.gib(row["host_bytes"]["to_host"]), "GiB")
        seen.add("hbm_gb_per_step", row["memory_bytes"] / memory.GB, "GB")
        copy_observations(seen, row["host_copies"].get("by_direction", {}))
        for kind, collective in row["collectives"].items():
            seen.add(names.collective_gb(kind), collective["bytes"] / memory.GB, "GB")
            seen.add(names.collective_runs(kind), collective["count"])
            seen.add(names.collective_runs(kind, synchronous=True), collective.get("synchronous"))
        seen.add("collective_gb_per_step", sum(c["bytes"] for c in row["collectives"].values()) / memory.GB, "GB")
        clone_observations(seen, row.get("clones"), row.get("rematerialization"))
        for name, value in (row.get("breakdown") or {}).items():
            seen.add(name, value, "s")
        seen.add("implied_host_gb_s_per_direction", row.get("implied_host_gb_s_per_direction"), "GB/s")
        between = row.get("network") or {}
        for end in names.NETWORK_ENDS:
            per_nic = (between.get("bytes_per_nic") or {}).get(end)
            seen.add(f"network_{end}_gb_per_nic", per_nic / memory.GB if per_nic else None, "GB")
            seen.add(f"network_{end}_s_per_step", (between.get("seconds_at_link") or {}).get(end), "s")
        found += seen.observations
    for gain in result.get("gains", []):
        seen = Observer(result, source, "predicted", gain["offload"], result["target"])
        seen.add("offload_gain", gain["gain"], "fraction", low=gain["low"], high=gain["high"], message=gain["by"])
        found += seen.observations
    return found


def against_measured(observations: list[Observation]) -> list[Observation]:
    """Each row predicted for hardware it also ran on: its prediction's error against the run
    (predicted / measured - 1), beside the prediction, and the mean and largest of those errors
    (a fact about the target, row None)."""
    measured = {
        (o.row, o.target): o
        for o in observations
        if o.evidence == "measured" and o.metric == names.TFLOPS and o.at is None and o.value
    }
    found = []
    for o in observations:
        run = measured.get((o.row, o.target))
        if o.evidence != "predicted" or o.metric != names.TFLOPS or run is None or not o.value:
            continue
        error = float(o.value) / float(run.value) - 1
        message = f"predicted {o.value:.1f} against {run.value:.1f} measured ({run.source})"
        metric = names.ERROR_AGAINST_MEASURED
        found.append(
            Observation(o.row, o.target, "predicted", metric, error, "fraction", o.status, o.source, message=message)
        )
    by_target: dict[str | None, list[Observation]] = {}
    for o in found:
        by_target.setdefault(o.target, []).append(o)
    for target, errors in by_target.items():
        sizes = [abs(float(o.value)) for o in errors if isinstance(o.value, float)]
        source = errors[0].source
        for metric, value, unit in (
            (names.ERROR_AGAINST_MEASURED_ROWS, len(sizes), None),
            (names.ERROR_AGAINST_MEASURED_MEAN_ABS, sum(sizes) / len(sizes), "fraction"),
            (names.ERROR_AGAINST_MEASURED_LARGEST_ABS, max(sizes), "fraction"),
        ):
            found.append(Observation(None, target, "predicted", metric, value, unit, "ok", source))
    return found


def device_prediction_observations(result: dict[str, Any], source: str) -> list[Observation]:
    """Per row a device ran: its step as the model predicts it from the other programs of its model
    family the device ran (the kept model; the median, with the lowest and highest), and the
    throughput that gives (which `against_measured` sets against the run's). The other
    calibrations and models stay in the result's details."""
    found: list[Observation] = []
    for program in result["programs"].values():
        if not (predicted := program["predicted"]):
            continue
        model_tflops = program["model_tflops"]
        tflops = {"low": model_tflops / predicted["high"], "high": model_tflops / predicted["low"], "n": predicted["n"]}
        for row in program["rows"]:
            seen = Observer(result, source, "predicted", row, result["target"])
            seen.add(names.STEP_S, predicted["step_s"], "s", spread=predicted)
            seen.add(names.TFLOPS, model_tflops / predicted["step_s"], "TFLOPs/s/device", spread=tflops)
            found += seen.observations
    return found


def validation_observations(result: dict[str, Any], source: str) -> list[Observation]:
    """Per published run measured elsewhere: its measured step, the step predicted under each
    calibration (one run of its GPU and precision: central value and band over the settings; every
    run in turn: its errors; across hardware), the simple model's beside it, and the step's terms."""
    found: list[Observation] = []
    simple = result["errors"]["simple_model"]
    for run in result["runs"]:
        seen = Observer(run, source, "validation", run["run"], run["target"])
        seen.status_line()
        for name in ("source", "family", "model", "precision"):
            seen.add(name, run.get(name))
        seen.add("gpus", run["gpus"])
        seen.add("measured_step_s", run["measured_step_s"], "s")
        if run["status"] == "ok":
            smallest = run["smallest"]
            steps = smallest["step_s"]
            present = [step for step in steps if step is not None]
            if present:
                seen.add("predicted_step_s", steps[0], "s", low=min(present), high=max(present))
            seen.add("calibrated_on", smallest["calibrated_on"])
            seen.add("untested", run.get("untested"))
            seen.add("error", smallest["error"], "fraction")
            seen.add("simple_model_error", smallest["by_model"].get(simple), "fraction")
            seen.add("every_run_mean_abs_error", run["every_run"]["mean_abs"], "fraction")
            seen.add("every_run_largest_abs_error", run["every_run"]["largest_abs"], "fraction")
            across = run.get("across_hardware") or {}
            band = {"low": across["band"]["low_s"], "high": across["band"]["high_s"]} if across.get("band") else {}
            seen.add("across_hardware_step_s", (across.get("step_s") or [None])[0], "s", **band)
            seen.add("across_hardware_error", across.get("error"), "fraction")
            seen.add("not_carried", run.get("not_carried"))
            for name, value in (run.get("breakdown") or {}).items():
                seen.add(name, value, "s")
        found += seen.observations
    return found
