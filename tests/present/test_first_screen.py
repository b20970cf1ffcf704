"""The first screen of a target's page: selected from the verdicts, never more than they say."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import hardware_classes, load_rows, load_target
from offload_repro.present.first_screen import first_screen
from offload_repro.present.rerun import rerun, versions


def claim(claim_id: str, verdict: str, evidence: str, **fields: Any) -> dict[str, Any]:
    summary = {"evidence": evidence, "observed": None, "deviation": None, "relative_deviation": None}
    summary |= fields.pop("summary", {})
    return {
        "id": claim_id,
        "kind": fields.pop("kind", "value"),
        "statement": f"{claim_id} as the post says it.",
        "unit": fields.pop("unit", "GiB"),
        "published": fields.pop("published", None),
        "subjects": fields.pop("subjects", [claim_id]),
        "verdict": verdict,
        "summary": summary,
        "judgements": fields.pop("judgements", []),
        **fields,
    }


GB200 = {"evidence": "measured", "verdict": "not-comparable", "would_judge": "gb200-nvl72"}
VERDICTS = {
    "claims": [
        claim("memory", "pass", "compiled", independent=True),
        claim("chosen", "pass", "compiled", independent=False),
        claim("bytes", "pass", "analytic"),
        claim(
            "plain",
            "fail",
            "compiled",
            published=145.6,
            summary={"observed": 161.9, "relative_deviation": 0.112},
            built_under=["allocator-memory-fraction", "deepseek-moe-dispatch"],
        ),
        claim(
            "fits",
            "fail",
            "compiled",
            kind="outcome",
            unit=None,
            summary={"observed": "oom", "needs_gib": 169.9, "limit_gib": 169.6},
            built_under=["deepseek-moe-dispatch"],
        ),
        claim(
            "gain",
            "inconclusive",
            "predicted",
            unit="fraction",
            published=0.029,
            subjects=["offload", "baseline"],
            summary={"observed": -0.01, "deviation": -0.039, "relative_deviation": -1.35},
            judgements=[GB200],
        ),
        claim("speed", "not-comparable", "measured", judgements=[GB200]),
        claim("own", "pass", "compiled", kind="check"),
    ]
}


def test_the_summary_counts_the_source_claims_and_keeps_by_construction_apart():
    screen = first_screen(VERDICTS, load_target("cpu"), load_target("gb200-nvl72"))
    assert screen["claims"] == 7  # the package's own check is not a claim of the source
    assert screen["passed"] == 2 and screen["by_construction"] == ["chosen"]
    assert [(h["evidence"], h["count"]) for h in screen["held"]] == [("compiled", 1), ("analytic", 1)]
    assert "128 NVIDIA GB200 GPUs" in screen["held"][0]["how"]
    assert screen["inconclusive"] == 1 and screen["not_comparable"] == 1


def test_a_speed_up_is_written_in_points_and_a_value_relative_to_the_published():
    screen = first_screen(VERDICTS, load_target("cpu"), load_target("gb200-nvl72"))
    failed, oom = screen["failed"]
    assert failed["deviation"] == 0.112 and not failed["fraction"]
    assert (oom["observed"], oom["needs_gib"], oom["limit_gib"]) == ("oom", 169.9, 169.6)
    (gain,) = screen["predicted"]
    assert gain["fraction"] and gain["deviation"] == -0.039  # percentage points, not -135%
    (decide,) = screen["would_decide"]
    assert decide["target"] == "gb200-nvl72" and decide["count"] == 2 and "target=gb200-nvl72" in decide["command"]
    assert not decide["kept"]


def test_claims_a_kept_chip_judges_point_at_its_page():
    # the one-device class lists the target whose runs are kept first: its page judges them
    assert hardware_classes()["single-device"][0] == "tpu-v5e-1"
    chip = {"evidence": "measured", "verdict": "not-comparable", "would_judge": "tpu-v5e-1"}
    verdicts = VERDICTS | {"claims": [claim("fits-mb2", "not-comparable", "measured", judgements=[chip])]}
    (decide,) = first_screen(verdicts, load_target("cpu"), load_target("gb200-nvl72"))["would_decide"]
    assert decide["kept"] and decide["machine"] == "1 Google TPU v5e chip"


def test_the_rerun_lines_name_every_row_its_flags_and_its_command(tables):
    rows = load_rows(tables)
    lines = rerun(load_target("cpu"), rows, "cpu.html", {"python": "3.12.1", "versions": {"jax": "0.1"}}, None)
    assert lines["versions"] == {"Python": "3.12.1", "jax": "0.1"}
    assert len(lines["rows"]) == len(rows)
    first = lines["rows"][0]
    assert first["flags"] == rows[0].xla_flags and first["command"].endswith(f"'rows=[\"{rows[0].id}\"]'")
    assert "results/report/cpu.html --forcerun report" in lines["page"]
    assert versions(None, {"versions": {"jax": None}}) == {}


def test_the_failures_name_the_unstated_settings_they_were_built_under_most_shared_first():
    screen = first_screen(VERDICTS, load_target("cpu"), load_target("gb200-nvl72"))
    assert screen["failed_under"] == ["the MoE dispatch", "the allocator's share of GPU memory"]
    assert screen["sensitivity"].endswith("--config assumptions=True")


def test_where_the_sensitivity_stage_ran_it_names_the_alternatives_failed_claims_pass_under_and_what_was_in_view():
    """The real alternative found with plain offload's published 145.6 GiB in view says so beside the
    claims that pass under it; one not found so (expert-8) says nothing more."""
    under = [
        {"assumption": "deepseek-parallelism", "alternative": "fsdp-over-experts", "verdict": "pass", "why": None},
        {"assumption": "deepseek-parallelism", "alternative": "expert-8", "verdict": "pass", "why": None},
        {"assumption": "deepseek-moe-dispatch", "alternative": "capacity-1.0", "verdict": "fail", "why": None},
    ]
    robust = {"robust": False, "default": "fail", "under": under}
    verdicts = {"claims": [c | {"robustness": robust} if c["verdict"] == "fail" else c for c in VERDICTS["claims"]]}
    screen = first_screen(verdicts, load_target("cpu"), load_target("gb200-nvl72"))
    assert screen["failed_pass_under"] == [
        {"alternative": "deepseek-parallelism.expert-8", "claims": ["plain", "fits"], "in_view": []},
        {
            "alternative": "deepseek-parallelism.fsdp-over-experts",
            "claims": ["plain", "fits"],
            "in_view": ["deepseek-plain-gpu-memory"],
        },
    ]
    assert first_screen(VERDICTS, load_target("cpu"), load_target("gb200-nvl72"))["failed_pass_under"] == []


def test_the_title_says_what_the_evidence_was():
    said = first_screen(VERDICTS, load_target("cpu"), load_target("gb200-nvl72"))["evidence_from"]
    assert (
        said
        == "programs compiled for 128 NVIDIA GB200 GPUs, MaxText's configs and scaled-down runs on this machine's CPU"
    )
    chip = first_screen(VERDICTS, load_target("tpu-v5e-1"), None)["evidence_from"]
    assert chip == "MaxText's configs and runs on 1 Google TPU v5e chip"
