"""A target's rates: each link at its own achieved share of its cited bandwidth."""

from __future__ import annotations

import pytest

from offload_repro.core.data import load_target
from offload_repro.core.published import load_speed
from offload_repro.produce.predicted.target_rates import LINKS, link_efficiency, rates, settings


def test_each_link_runs_at_its_own_measured_share_and_a_link_without_one_at_the_stated_range():
    """GB200 at the central level: HBM at 90% of XLA's 7.93 TB/s, NVLink at 77% of 900 GB/s one way,
    InfiniBand at 93% of 50 GB/s, and host copies at 45% of NVLink-C2C's 450 GB/s (202.5 GB/s: below
    the 255.5 GB/s each GPU gets of its Grace's memory when both copy); Vera Rubin states no
    measurement, so its links take experiments/speed.yaml's 75%."""
    speed = load_speed()
    gb200, rubin = load_target("gb200-nvl72"), load_target("vr-nvl144")
    central = settings(speed)[0]
    assert central.level == "central" and [s.level for s in settings(speed)[:3]] == ["central", "low", "high"]
    at = rates(gb200, 1e15, central, "nvfp4", speed)
    assert at.hbm_bytes_per_s == pytest.approx(7_928_064_000_000 * 0.90)
    assert at.collective_bytes_per_s == pytest.approx(900e9 * 0.77)
    assert at.network_bytes_per_s == pytest.approx(50e9 * 0.93)
    assert at.to_host_bytes_per_s == at.from_host_bytes_per_s == pytest.approx(450e9 * 0.45)
    assert link_efficiency(rubin, "hbm", "central", speed) == speed["link_efficiency"]["central"] == 0.75
    # no share above the cited peak anywhere
    assert all(link_efficiency(gb200, link, s.level, speed) <= 1 for s in settings(speed) for link in LINKS)
