"""The README's times are what workflow/scripts/benchmark.py --record measured (envs/timings.yaml),
rendered by `python -m offload_repro.plan --write`: never typed, each with its commit and day."""

from __future__ import annotations

import pytest
import yaml

from offload_repro.core.data import DataError
from offload_repro.plan import timings

RECORD = {
    "machine": {"cores": 2, "memory_gib": 23.5},
    "figures": {
        "main_job": {
            "seconds": 238.4,
            "commit": "d790516",
            "measured_on": "2026-12-07",
            "how": "the cold main job on a fresh copy, 39 jobs",
            "bare_maxtext_s": 12.96,
        },
        "ci": {"seconds": 1172.0, "commit": "d790516", "measured_on": "2026-12-07", "how": "`.ci/run` on a clone"},
    },
}


@pytest.mark.parametrize(("seconds", "said"), [(48.4, "48 s"), (278.2, "4 min 38 s"), (1172.0, "20 min")])
def test_a_duration_reads_to_the_second_below_ten_minutes_and_to_the_minute_above(seconds, said):
    assert timings.duration(seconds) == said


def test_the_readme_sentence_gives_each_measured_command_its_time_commit_and_day(tmp_path):
    path = tmp_path / "timings.yaml"
    path.write_text(yaml.safe_dump(RECORD))
    said = timings.timings_block(path)
    assert said.startswith("Measured on 2 cores and 23.5 GiB with nothing else running (")
    # each figure measured at its own commit, day and bare run: said beside it
    main = "the main job 3 min 58 s (the cold main job on a fresh copy, 39 jobs; at d790516 on 2026-12-07,"
    assert main + " a bare MaxText run taking 12.96 s)" in said
    assert "every test as CI runs them 20 min (`.ci/run` on a clone; at d790516 on 2026-12-07)" in said
    assert "bootstrap" not in said  # a figure not measured is not said
    # every figure measured at one commit, day and bare run: said once
    shared = yaml.safe_load(yaml.safe_dump(RECORD))
    shared["figures"]["ci"]["bare_maxtext_s"] = 12.96
    path.write_text(yaml.safe_dump(shared))
    said = timings.timings_block(path)
    assert said.startswith(
        "Measured on 2 cores and 23.5 GiB with nothing else running, at d790516 on 2026-12-07, a bare MaxText run"
        " taking 12.96 s ("
    )
    assert said.endswith("every test as CI runs them 20 min (`.ci/run` on a clone).") and said.count("d790516") == 1


def test_a_figure_without_its_commit_is_refused_by_name(tmp_path):
    broken = yaml.safe_load(yaml.safe_dump(RECORD))
    del broken["figures"]["ci"]["commit"]
    path = tmp_path / "timings.yaml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(DataError, match=r"envs/timings.yaml: .*figures.*ci.*commit"):
        timings.load_timings(path)
