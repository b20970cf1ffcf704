"""Unstated settings as data: stated once, varied one at a time, and claims that depend on them."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from conftest import FIXTURES, REPO
from offload_repro.core.assumptions import check_ids, load_assumptions, variants
from offload_repro.core.data import DataError, load_rows, load_target
from offload_repro.core.maxtext_args import xla_flags
from offload_repro.core.results import write_result
from offload_repro.core.variants import apply, resolved, schedules_by_profile, variant_id, variant_row
from offload_repro.judge.robustness import frontier_verdict, policy_points, robustness
from offload_repro.plan.inputs import stage_code
from offload_repro.produce.compiled.program_cache import LHS_OFF, program_key
from offload_repro.produce.whatif.alternatives import write_sensitivity
from report_page import build_report, raw_placeholders, with_appendix

ROWS = {row.id: row for row in load_rows(sorted((REPO / "experiments/rows").glob("*.yaml")))}
GB200 = load_target("gb200-nvl72")


def test_every_assumption_named_is_stated_once_and_at_least_three_are_varied_twice():
    named = {f"{row.source_file}: row '{row.id}'": row.assumptions for row in ROWS.values()}
    named["gb200-nvl72 compile"] = GB200.spec["compile"]["assumptions"]
    check_ids(named, list(ROWS.values()))
    varied = [a for a in load_assumptions().values() if len(a.get("alternatives", [])) >= 2]
    assert len(varied) >= 3
    with pytest.raises(DataError, match=r"row 'x', field 'assumptions': unknown ids \['sequence-length'\]"):
        check_ids({"rows.yaml: row 'x'": ["sequence-length"]}, [])


def test_a_row_that_names_a_varied_assumption_is_varied_with_it():
    """The sensitivity stage varies the rows an assumption affects: a row that names the assumption
    and is left out would be compared, under an alternative, with rows compiled otherwise."""
    left_out = replace(ROWS["llama-baseline"], assumptions=["deepseek-parallelism"])
    with pytest.raises(
        DataError, match=r"assumption 'deepseek-parallelism', field 'affects': rows \['llama-baseline'\] name it"
    ):
        check_ids({}, [*(row for row in ROWS.values() if row.id != "llama-baseline"), left_out])
    remat = {a["id"] for a in load_assumptions().values() if "deepseek-remat" in a.get("affects", [])}
    assert {"deepseek-sequence-length", "deepseek-parallelism", "deepseek-moe-dispatch", "remat-device-flags"} <= remat


def test_a_default_is_what_is_compiled_and_each_alternative_is_another_program(tmp_path):
    """The default stated for an assumption is the row as compiled: applying it changes no program.
    An alternative that schedules by a latency profile is another program by its profile."""
    profile = tmp_path / "profile.pbtxt"
    profile.write_text('costs { name: "abc::fusion.1" cost_us: 1.000 }\n')
    keys = set()
    for assumption in load_assumptions().values():
        for row_id in assumption.get("affects", []):
            as_compiled = apply(ROWS[row_id], resolved(assumption, assumption["default"]), "")
            assert program_key(as_compiled, GB200) == program_key(ROWS[row_id], GB200), (assumption["id"], row_id)
    for assumption, alternative in variants():
        for row_id in assumption["affects"]:
            variant = variant_row(ROWS[row_id], assumption, alternative)
            assert variant.id == f"{row_id}@{variant_id(assumption, alternative)}"
            guided = profile if schedules_by_profile(alternative["settings"]) else None
            key = program_key(variant, GB200, latency_profile=guided)
            keys.add(key)
            assert key != program_key(ROWS[row_id], GB200)
    assert len(keys) == sum(len(a["affects"]) for a, _ in variants())


def test_compiles_do_not_read_the_assumptions_file_so_a_new_alternative_replans_only_its_variants():
    assert "experiments/assumptions.yaml" not in stage_code("compile")
    assert "experiments/assumptions.yaml" in stage_code("sensitivity")
    assert "experiments/assumptions.yaml" in stage_code("report")


def test_a_frontier_claim_under_an_alternative_is_bounded_by_its_policys_rows():
    points, micro_batches = policy_points(
        [{"id": "deepseek-device", "row": "deepseek-device-mb8"}], list(ROWS.values())
    )
    assert sorted(points["deepseek-device"]) == ["deepseek-device-mb2", "deepseek-device-mb8"]
    assert (micro_batches["deepseek-device-mb2"], micro_batches["deepseek-device-mb8"]) == (2, 8)
    claim = {"check": {"policies": ["deepseek-device"], "min": 2, "below": 8}}
    outcomes = {"deepseek-device-mb2": (2, "fits"), "deepseek-device-mb8": (8, "oom")}
    assert frontier_verdict(claim, outcomes, points)[0] == "pass"
    assert frontier_verdict(claim, outcomes | {"deepseek-device-mb8": (8, "fits")}, points)[0] == "fail"
    assert frontier_verdict(claim, outcomes | {"deepseek-device-mb2": (2, "oom")}, points)[0] == "fail"
    assert frontier_verdict(claim, {"deepseek-device-mb8": (8, "oom")}, points)[0] == "undetermined"


def test_a_claim_is_robust_or_depends_on_the_assumptions_that_change_it(tmp_path):
    """A stand-in judge: the claim passes while the row's device memory stays under 150 GiB; each
    alternative's compile result is a real one with its device memory changed."""
    real = json.loads((FIXTURES / "results/compiled/gb200-nvl72/deepseek-offload-plain.json").read_text())
    real.pop("kind"), real.pop("schema_version")
    claims = [
        {"id": "under-150", "check": {"rows": ["r"]}, "judged_by": [{"evidence": "compiled"}]},
        {"id": "any-memory", "check": {"rows": ["r"]}, "judged_by": [{"evidence": "compiled"}]},
    ]

    def judge(chosen, observations):
        memory = next(o["value"] for o in observations if o["metric"] == "device_gib")
        return {"under-150": "pass" if memory < 150 else "fail", "any-memory": "pass"}

    def variant(gib):
        path = tmp_path / f"{gib}.json"
        write_result(path, "compile", real | {"device_bytes": int(gib * 1024**3)})
        return {"results": {"r": {"status": "ok", "file": str(path)}}}

    failed = {"r": {"status": "error", "message": "does not divide", "file": None}}
    sensitivity = {
        "target": "gb200-nvl72",
        "assumptions": [
            {
                "id": "length",
                "affects": ["r"],
                "alternatives": [{"id": "short", **variant(120.0)}, {"id": "long", **variant(170.0)}],
            },
            {"id": "split", "affects": ["r"], "alternatives": [{"id": "experts", "results": failed}]},
        ],
    }
    observed = dict(row="r", target="gb200-nvl72", evidence="compiled", metric="device_gib", value=140.0, at=None)
    found = robustness(claims, [observed], sensitivity, judge, {}, {})
    assert found["under-150"]["robust"] is False and found["under-150"]["depends_on"] == ["length"]
    assert [u["verdict"] for u in found["under-150"]["under"]] == ["pass", "fail", "untested"]
    assert found["any-memory"]["robust"] is True and found["any-memory"]["untested"] == ["split.experts"]


def test_the_page_marks_each_claim_robust_or_dependent_and_shows_every_assumption(tmp_path, tables):
    """Stand-in alternatives built from the real GB200 compile fixtures: under one of them the
    plain offload row no longer fits, which turns the claim on its memory."""
    fixtures = FIXTURES / "results/compiled/gb200-nvl72"
    deepseek = ["deepseek-offload-plain", "deepseek-device-mb8"]
    variant_files = []
    for alternative in ("seq-2048", "seq-8192"):
        name = f"deepseek-sequence-length.{alternative}"
        for row in deepseek:
            result = json.loads((fixtures / f"{row}.json").read_text())
            result.update(row=f"{row}@{name}", variant={"id": name, "settings": {}})
            if alternative == "seq-8192" and row == "deepseek-offload-plain":
                result.update(fits=False, margin_gib=-40.0, device_bytes=result["capacity_bytes"] + 40 * 1024**3)
            if alternative == "seq-2048" and row == "deepseek-offload-plain":
                # the default compiles 9% above the published 145.6 GiB (a fail); shorter sequences fit it
                result.update(device_bytes=140 * 1024**3)
            result.pop("kind"), result.pop("schema_version")
            variant_files.append(tmp_path / name / f"{row}.json")
            write_result(variant_files[-1], "compile", result)
    sensitivity = tmp_path / "assumptions.json"
    # one alternative predicted (the real GB200 prediction fixture stands in for it and for the defaults)
    predicted = tmp_path / "deepseek-sequence-length.seq-2048" / "predicted.json"
    predicted.write_text((FIXTURES / "results/predicted/gb200-nvl72.json").read_text())
    write_sensitivity(
        GB200,
        default_files=[fixtures / f"{r}.json" for r in deepseek],
        variant_files=variant_files,
        predicted_files=[predicted],
        out=sensitivity,
        default_predicted=FIXTURES / "results/predicted/gb200-nvl72.json",
    )
    assumed = ("--assumptions", str(sensitivity))
    _, verdicts, page = build_report(
        tmp_path, tables, sorted(fixtures.glob("*.json")), check=(*assumed, "--tables", *tables), report=assumed
    )
    claims = {c["id"]: c for c in json.loads(verdicts.read_text())["claims"]}
    plain = claims["deepseek-plain-gpu-memory"]["robustness"]
    assert plain["robust"] is False and plain["depends_on"] == ["deepseek-sequence-length"]
    # a compiled figure never passes a memory value: its measured band is wider than the tolerance
    assert [u["verdict"] for u in plain["under"][:2]] == ["inconclusive", "fail"]
    assert claims["deepseek-device-save-oom-mb8"]["robustness"]["robust"] is True
    html = with_appendix(page)
    line = html[html.index('<tr id="claim-deepseek-plain-gpu-memory"') :]
    # the assumptions' section is in the appendix beside the page
    assert 'depends on <a href="cpu-appendix.html#assumption-deepseek-sequence-length">' in line[: line.index("</tr>")]
    section = html[html.index('<section id="assumptions">') :]
    assert 'id="assumption-deepseek-parallelism"' in section and "max_target_length 8192" in section
    # each setting's leave-one-out error per model beside its memory: the defaults', a predicted
    # alternative's, and an alternative that was not predicted
    table = section[: section.index("</table>")]
    errors = "llama 6.4%, 10.3%; deepseek 33.6%, 33.6%"
    assert table.count(errors) == 2
    short, long = table.index('id="alternative-deepseek-sequence-length-seq-2048"'), table.index("seq-8192</strong>")
    assert errors in table[short:long] and "not predicted" in table[long:]
    assert raw_placeholders(html) == []


def test_a_profile_guided_schedule_affects_exactly_the_rows_whose_scheduler_a_profile_can_guide(tables):
    """XLA turns the latency-hiding scheduler on for a program with a profile: the alternative must
    leave the rows that turn it off alone, and cover every other."""
    guided = [assumption for assumption, alternative in variants() if schedules_by_profile(alternative["settings"])]
    assert [entry["id"] for entry in guided] == ["xla-latency-estimator"]
    lhs_on = [row.id for row in load_rows(tables) if LHS_OFF not in xla_flags(row)]
    assert sorted(guided[0]["affects"]) == sorted(lhs_on)


def test_an_alternative_replaces_only_the_flags_its_own_assumption_states():
    """Two assumptions state the Llama rows' unstated flags (the rematerialisation pass, the recipes'
    collective flags): each alternative swaps its own and keeps the other's."""
    known = load_assumptions()
    remat, collective = known["xla-rematerialization"], known["llama-collective-flags"]
    row = ROWS["llama-qkv-offload-lhs"]
    remat_flag = "--xla_disable_hlo_passes=rematerialization"
    pipelined = "--xla_gpu_enable_pipelined_all_gather=true"
    assert {remat_flag, pipelined} <= set(row.unstated_xla_flags)
    pass_on = variant_row(row, remat, remat["alternatives"][0])
    assert remat_flag not in pass_on.unstated_xla_flags and pipelined in pass_on.unstated_xla_flags
    xla_collectives = variant_row(row, collective, collective["alternatives"][0])
    assert xla_collectives.unstated_xla_flags == [remat_flag]
    # a default keeps its flags where the row states them: the row as compiled
    assert apply(row, resolved(remat, remat["default"]), "").unstated_xla_flags == row.unstated_xla_flags
