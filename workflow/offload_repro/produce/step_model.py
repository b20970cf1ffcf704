"""The step-time model: a compiled program's schedule replayed at stated rates.

One compute stream runs the scheduled instructions in order, each GEMM or attention call taking
its FLOPs over the effective compute rate (peak x efficiency); instructions without FLOPs take no
time (the efficiency absorbs them). Each async transfer (`*-start` ... `*-done`) runs on its own
channel, to the host, from the host or the collective network, one transfer at a time per
channel, from its start; its done waits for it. A synchronous transfer stops the compute stream.
A loop body is replayed twice: a transfer started in one iteration and awaited in the next (a
pipelined copy) is carried over, and the second iteration is the steady state.

What the schedule cannot hide is exposed time: the step time minus the same replay with that
channel made free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from offload_repro.produce.hlo_program import Event


@dataclass(frozen=True)
class Rates:
    flops_per_s: float
    to_host_bytes_per_s: float = math.inf
    from_host_bytes_per_s: float = math.inf
    collective_bytes_per_s: float = math.inf

    def seconds(self, channel: str, moved: int) -> float:
        rate = {
            "to_host": self.to_host_bytes_per_s,
            "from_host": self.from_host_bytes_per_s,
            "collective": self.collective_bytes_per_s,
        }[channel]
        return moved / rate if rate else math.inf


class Replay:
    def __init__(self, events: dict[str, list[Event]], rates: Rates, charge_unspent: bool = False):
        self.events, self.rates, self.charge_unspent = events, rates, charge_unspent
        self.memo: dict[str, float] = {}
        self.compute_s = 0.0

    def computation(self, name: str) -> float:
        if name not in self.memo:
            first, ends, starts = self._once(name, {}, {})
            carried = {key: end - first for key, end in ends.items()}  # relative to the next iteration
            second, _, _ = self._once(name, carried, starts)
            self.memo[name] = second
        return self.memo[name]

    def _once(
        self, name: str, carried: dict[str, float], seen_starts: dict[str, float]
    ) -> tuple[float, dict[str, float], dict[str, float]]:
        now, free, ends, starts = 0.0, {}, {}, {}
        ready = dict(carried)
        for event in self.events.get(name, []):
            if event.kind == "compute":
                flops = event.flops if self.charge_unspent else event.flops - event.unspent
                now += flops / self.rates.flops_per_s
            elif event.kind in ("start", "transfer"):
                begin = max(now, free.get(event.channel, 0.0))
                end = begin + self.rates.seconds(event.channel, event.bytes)
                free[event.channel] = end
                if event.kind == "transfer":
                    now = end
                else:
                    ends[event.key], starts[event.key], ready[event.key] = end, begin, end
            elif event.kind == "done":
                now = max(now, ready.pop(event.key, now))
            elif event.kind == "loop":
                now += event.times * self.computation(event.body)
        return now, ends, starts


def step_seconds(events: dict[str, list[Event]], entry: str, rates: Rates, charge_unspent: bool = False) -> float:
    return Replay(events, rates, charge_unspent).computation(entry)


def breakdown(events: dict[str, list[Event]], entry: str, rates: Rates) -> dict[str, float]:
    """The step time and what makes it: compute alone, and the time each kind of transfer adds."""
    step = step_seconds(events, entry, rates)
    compute = step_seconds(events, entry, Rates(rates.flops_per_s))
    no_host = step_seconds(events, entry, replace(rates, to_host_bytes_per_s=math.inf, from_host_bytes_per_s=math.inf))
    no_collectives = step_seconds(events, entry, replace(rates, collective_bytes_per_s=math.inf))
    return {
        "step_s": step,
        "compute_s": compute,
        "exposed_host_copy_s": step - no_host,
        "exposed_collective_s": step - no_collectives,
    }


def calibrate(
    events: dict[str, list[Event]], entry: str, model_flops: float, published_flops_per_s: float, rates: Rates
) -> float:
    """The effective compute rate (FLOP/s) at which the program's predicted throughput (model
    FLOPs over step time) equals the published one, the transfer rates held; bisection in log space."""
    low, high = 1e12, 1e18
    if model_flops / step_seconds(events, entry, replace(rates, flops_per_s=high)) < published_flops_per_s:
        raise ValueError("the published throughput cannot be reached at any compute rate: transfers alone exceed it")
    for _ in range(100):
        middle = math.sqrt(low * high)
        achieved = model_flops / step_seconds(events, entry, replace(rates, flops_per_s=middle))
        low, high = (middle, high) if achieved < published_flops_per_s else (low, middle)
    return math.sqrt(low * high)
