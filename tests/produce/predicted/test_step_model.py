"""The step-time model's replay (produce/predicted/step_model.py) held, float for float, to its rules
read one event at a time, on real programs: the chip's kept programs
(experiments/device-results/tpu-v5e-1/programs/), whose schedules hold host copies, collectives and
loops. The replay groups each run of compute events and costs them as arrays, for speed: it must
give the very same floats, not nearly the same."""

from __future__ import annotations

import dataclasses
import math

import pytest

from conftest import REPO
from offload_repro.produce.predicted import device_prediction, step_model
from offload_repro.produce.predicted.hlo_schedule import Event

KEPT = REPO / "experiments/device-results/tpu-v5e-1/programs"


def event_by_event(events: dict[str, list[Event]], name: str, rates: step_model.Rates, charge: bool) -> float:
    """The model's rules as its docstring states them, one event at a time: compute advances the
    stream, a start runs on its channel from when the stream and the channel are free, a done waits
    for its transfer, a loop body is replayed twice (the second, with what the first left in flight,
    is the steady state)."""

    def once(body: str, carried: dict[str, float]) -> tuple[float, dict[str, float]]:
        now, free, ends, ready = 0.0, {}, {}, dict(carried)
        for event in events.get(body, []):
            if event.kind == "compute":
                now += rates.compute_seconds(event, charge)
            elif event.kind in ("start", "transfer"):
                begin = max(now, free.get(event.channel, 0.0))
                end = begin + rates.seconds(event)
                free[event.channel] = end
                if event.kind == "transfer":
                    now = end
                else:
                    ends[event.key] = ready[event.key] = end
            elif event.kind == "done":
                now = max(now, ready.pop(event.key, now))
            elif event.kind == "loop":
                now += event.times * steady(event.body)
        return now, ends

    memo: dict[str, float] = {}

    def steady(body: str) -> float:
        if body not in memo:
            first, ends = once(body, {})
            memo[body] = once(body, {key: end - first for key, end in ends.items()})[0]
        return memo[body]

    return steady(name)


@pytest.fixture(scope="module", params=["llama-qkv-offload-lhs", "deepseek-offload-plain"])
def program(request) -> dict:
    return device_prediction.read_program(KEPT / f"{request.param}.hlo.gz")


def rates_to_try() -> list[step_model.Rates]:
    base = step_model.Rates(
        flops_per_s=150e12, to_host_bytes_per_s=7e9, from_host_bytes_per_s=7e9, collective_bytes_per_s=4e10
    )
    return [
        base,
        dataclasses.replace(base, hbm_bytes_per_s=8.1e11, attention_share=0.5),
        base.free("host"),
        dataclasses.replace(base, flops_per_s=3.7e11),
    ]


@pytest.mark.parametrize("model", ["full", "serial_copies"])
@pytest.mark.parametrize("charge", [False, True])
def test_the_replay_gives_the_event_by_event_step_float_for_float(program, model, charge):
    events, entry = program["events"][model], program["entry"]
    assert any(e.kind == "start" for evs in events.values() for e in evs) or model == "serial_copies"
    for rates in rates_to_try():
        replayed = step_model.Replay(events, rates, charge).computation(entry)
        assert replayed == event_by_event(events, entry, rates, charge)
        assert math.isfinite(replayed) and replayed > 0


def test_a_computations_compute_costs_are_each_events_own(program):
    rates = rates_to_try()[1]  # HBM finite, attention at half the rate
    for events in program["events"]["full"].values():
        compute = [e for e in events if e.kind == "compute"]
        work = step_model.plan(events).work
        for charge in (False, True):
            assert rates.compute_costs(work, charge) == [rates.compute_seconds(e, charge) for e in compute]
