"""The declared search for settings the source's outcomes decide: constraints from the rows, a bounded
order of candidates, a rank that reads no published number, and its record checked."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from offload_repro.core import outcome_settings
from offload_repro.core.data import DataError, load_rows
from offload_repro.core.files import read_yaml
from offload_repro.judge.claims import load_claims
from offload_repro.produce.whatif.settings_search import Search, differences

ROWS = load_rows(sorted((REPO / "experiments/rows").glob("*.yaml")))
CLAIMS = load_claims(REPO / "experiments/claims.yaml")
CONSTRAINTS = outcome_settings.constraints(ROWS, CLAIMS)
SPEC = outcome_settings.load()["search"]

# Each row's margin_gib (the allocator's 173.3 GiB less the program's need) as compiled for GB200 on
# 2026-12-07 (results/compiled/gb200-nvl72/*.json and results/whatif/assumptions/*/*.json).
DEFAULTS = {
    "llama-baseline": 24.42,
    "llama-qkv-offload-lhs": 26.04,
    "llama-qkv-offload-nolhs": 26.57,
    "llama-qkv-offload-lhs-pipelined": 24.34,
    "deepseek-remat": -4.83,
    "deepseek-offload-plain": 8.74,
    "deepseek-offload-optimized": -0.91,
    "deepseek-device-mb2": 8.43,
    "deepseek-device-mb8": -143.12,
}
COMPILED = {
    "deepseek-parallelism.fsdp-over-experts": {"deepseek-remat": 13.59, "deepseek-offload-plain": 27.98},
    "deepseek-moe-dispatch.capacity-1.0": {"deepseek-offload-optimized": 1.5},
    "remat-device-flags.lhs-off": {"deepseek-remat": 1.56},
    "deepseek-sequence-length.seq-2048": {"deepseek-remat": 23.5, "deepseek-device-mb2": 28.59},
    "allocator-memory-fraction.room-for-published": {"deepseek-remat": -2.08, "deepseek-offload-optimized": -5.09},
    "xla-rematerialization.xla-default": {"deepseek-remat": -3.0},
}


class FakeCompiles:
    """A compile per (changes, row): the margins above where a change moved the row, else the
    defaults'; a combination adds each change's move. Records what was asked for, in order."""

    def __init__(self, compiled: dict[str, dict[str, float]], broken: set[tuple[str, str]] = frozenset()) -> None:
        self.compiled, self.broken, self.asked = compiled, broken, []

    def __call__(self, changes: tuple[str, ...], rows: list[str]) -> dict[str, dict]:
        self.asked.append((changes, list(rows)))
        found = {}
        for row in rows:
            if any((change, row) in self.broken for change in changes):
                found[row] = {"status": "error", "message": "INTERNAL: RET_CHECK failure (xla/service/x.cc:1) in XLA"}
                continue
            margin = DEFAULTS[row] + sum(
                self.compiled.get(c, {}).get(row, DEFAULTS[row]) - DEFAULTS[row] for c in changes
            )
            found[row] = {"status": "ok", "margin_gib": margin}
        return found


def spec(**changes) -> dict:
    return {**SPEC, **changes}


def test_the_constraints_are_every_rows_published_outcome_as_the_outcome_claims_restate_them():
    by_row = {c.row: c.outcome for c in CONSTRAINTS}
    assert len(by_row) == 9 and by_row["deepseek-device-mb8"] == "oom"
    assert {outcome for row, outcome in by_row.items() if row != "deepseek-device-mb8"} == {"fits"}
    # an oom constraint's margin is how far the need is above the limit
    oom = next(c for c in CONSTRAINTS if c.row == "deepseek-device-mb8")
    assert oom.margin({"status": "ok", "margin_gib": -143.12}) == 143.12
    assert oom.margin({"status": "error", "message": "x"}) is None


def test_an_outcome_claim_that_disagrees_with_its_row_or_names_no_row_is_refused_by_file_and_field():
    claims = copy.deepcopy(CLAIMS)
    claim = next(c for c in claims if c["id"] == "deepseek-device-save-oom-mb8")
    claim["check"]["expect"] = "fits"
    with pytest.raises(DataError) as found:
        outcome_settings.constraints(ROWS, claims)
    assert str(found.value) == (
        "experiments/claims.yaml: claim 'deepseek-device-save-oom-mb8', field 'check.expect': 'fits', while row"
        " 'deepseek-device-mb8' (experiments/rows/deepseek-v3-671b.yaml) publishes outcome 'oom'"
    )
    claim["check"]["expect"], claim["check"]["rows"] = "oom", ["deepseek-device-mb9"]
    with pytest.raises(DataError, match=r"field 'check\.rows': unknown row 'deepseek-device-mb9'; did you mean"):
        outcome_settings.constraints(ROWS, claims)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d["search"].update(max_changes=0), "field 'search.max_changes': 0 searches nothing"),
        (
            lambda d: d["search"]["settings"].append("deepseek-paralelism"),
            "unknown setting 'deepseek-paralelism'; did you mean 'deepseek-parallelism'",
        ),
        (lambda d: d["search"]["settings"].append("static-fit"), "setting 'static-fit' has no alternatives to search"),
        (
            lambda d: d.update(
                record={
                    "recorded_on": "2026-12-07",
                    "defaults": {"margins_gib": {}},
                    "candidates": [
                        {
                            "changes": ["deepseek-parallelism.expert-9"],
                            "round": "single",
                            "margins_gib": {},
                            "holds": False,
                        }
                    ],
                    "chosen": None,
                    "why": "x",
                }
            ),
            "record, candidate 1, field 'changes': setting 'deepseek-parallelism' has no alternative 'expert-9';"
            " did you mean 'expert-8'?",
        ),
    ],
)
def test_bad_input_is_refused_before_any_compile_naming_file_entry_and_field(tmp_path: Path, edit, said):
    data = read_yaml(outcome_settings.SETTINGS_FILE)
    edit(data)
    path = tmp_path / "outcome-settings.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(DataError) as found:
        outcome_settings.load(path)
    assert str(found.value).startswith(str(path)) and said in str(found.value)


def test_singles_first_failing_rows_first_and_the_rank_prefers_a_choice_found_without_a_published_value():
    compiles = FakeCompiles(
        COMPILED | {"deepseek-moe-dispatch.capacity-1.0": {"deepseek-offload-optimized": 1.5, "deepseek-remat": 0.4}}
    )
    search = Search(spec(), CONSTRAINTS, compiles)
    search.run()
    found = search.result()
    # fsdp-over-experts raises remat but leaves the optimized row failing: its other rows are not compiled
    fsdp = next(c for c in found["candidates"] if c["changes"] == ["deepseek-parallelism.fsdp-over-experts"])
    assert not fsdp["holds"] and fsdp["margins_gib"]["deepseek-remat"] == 13.59
    assert (
        fsdp["not_compiled"]["deepseek-offload-plain"]
        == "not compiled: deepseek-offload-optimized still fails under it"
    )
    # a row it changes but did not compile has no margin: never the defaults' in its place
    assert fsdp["margins_gib"]["deepseek-offload-plain"] is None
    assert fsdp["margins_gib"]["llama-baseline"] == DEFAULTS["llama-baseline"]  # a row it does not change
    asked = [rows for changes, rows in compiles.asked if changes == ("deepseek-parallelism.fsdp-over-experts",)]
    assert asked == [["deepseek-offload-optimized", "deepseek-remat"]]
    # capacity-1.0 holds on both failing rows, then its other rows are compiled, and it is the one single that holds
    assert found["chosen"] == ["deepseek-moe-dispatch.capacity-1.0"]
    assert {c["round"] for c in found["candidates"]} == {"single"}  # no pair tried once a single holds
    assert found["why"].startswith(
        "1 candidate meets every constraint: deepseek-moe-dispatch.capacity-1.0, smallest margin +0.40 GiB"
    )


def test_where_no_single_holds_pairs_of_alternatives_that_each_raise_a_failing_margin_are_tried():
    compiles = FakeCompiles(COMPILED)
    search = Search(spec(), CONSTRAINTS, compiles)
    search.run()
    found = search.result()
    pairs = [c for c in found["candidates"] if c["round"] == "pair"]
    movers = {
        "deepseek-parallelism.fsdp-over-experts",
        "deepseek-moe-dispatch.capacity-1.0",
        "remat-device-flags.lhs-off",
        "deepseek-sequence-length.seq-2048",
        "allocator-memory-fraction.room-for-published",
        "xla-rematerialization.xla-default",
    }
    assert all(set(c["changes"]) <= movers for c in pairs)
    # two alternatives of one setting are never combined
    assert all(len({change.partition(".")[0] for change in c["changes"]}) == 2 for c in pairs)
    holding = [c["changes"] for c in pairs if c["holds"]]
    assert ["deepseek-parallelism.fsdp-over-experts", "deepseek-moe-dispatch.capacity-1.0"] in holding
    # seq-2048 with capacity-1.0 would hold on the failing rows, and fails nowhere in this fake: all tie on
    # count; the ones found without a published value in view come first, then the widest smallest margin
    chosen = found["chosen"]
    assert chosen is not None and len(chosen) == 2
    assert not outcome_settings.in_view(chosen)
    assert "chosen by" in found["why"]


def test_where_no_candidate_holds_the_record_says_which_constraint_none_meets_and_by_how_much():
    compiles = FakeCompiles(
        {"remat-device-flags.lhs-off": {"deepseek-remat": 1.56}},
        broken={("deepseek-parallelism.expert-8", "deepseek-offload-optimized")},
    )
    search = Search(spec(max_changes=1), CONSTRAINTS, compiles)
    search.run()
    found = search.result()
    assert found["chosen"] is None
    assert found["unmet"] == {"deepseek-offload-optimized": -0.91}
    assert found["why"].endswith("deepseek-offload-optimized is at best -0.91 GiB.")
    # a candidate that does not compile is recorded in XLA's words, and the search goes on
    broken = next(c for c in found["candidates"] if c["changes"] == ["deepseek-parallelism.expert-8"])
    assert broken["errors"]["deepseek-offload-optimized"].startswith("INTERNAL: RET_CHECK failure")
    assert broken["margins_gib"]["deepseek-offload-optimized"] is None
    assert len(found["candidates"]) == sum(len(a["alternatives"]) for a in _searched())


def test_the_record_is_checked_whole_and_says_what_differs():
    search = Search(
        spec(max_changes=1),
        CONSTRAINTS,
        FakeCompiles(
            COMPILED
            | {"deepseek-moe-dispatch.capacity-1.0": {"deepseek-offload-optimized": 1.5, "deepseek-remat": 0.4}}
        ),
    )
    search.run()
    found = search.result()
    assert differences(None, found) == ["nothing recorded yet"]
    recorded = {"recorded_on": "2026-12-07", **copy.deepcopy(found)}
    assert differences(recorded, found) == []
    recorded["candidates"][0]["margins_gib"]["deepseek-remat"] = 1.0
    said = differences(recorded, found)
    assert len(said) == 1 and said[0].startswith(f"candidate {found['candidates'][0]['changes']}: records")


def _searched() -> list[dict]:
    from offload_repro.core.assumptions import load_assumptions

    return [load_assumptions()[s] for s in SPEC["settings"]]
