"""The step-time model: a compiled program's schedule replayed at stated rates.

One compute stream runs the scheduled instructions in order. Each takes the longer of its FLOPs
over the effective compute rate (GEMMs at the rate of the weights' precision, attention at
BF16's) and the HBM bytes it reads and writes over the HBM bandwidth: an instruction without
FLOPs (element-wise, normalisation, the optimizer update) costs its bytes (a roofline per
instruction). Each async transfer (`*-start` ... `*-done`) runs on its own channel, to the host,
from the host or the collectives, one transfer at a time per channel, from its start; its done
waits for it. A collective takes the longer of its bus bytes over NVLink and, where its group
spans NVLink domains, its bytes per NIC over the scale-out network (at the ring or the
hierarchical end of their band). A synchronous transfer stops the compute stream.
A loop body is replayed twice: a transfer started in one iteration and awaited in the next (a
pipelined copy) is carried over, and the second iteration is the steady state.

What the schedule cannot hide is exposed time: the step time minus the same replay with that
channel made free.
"""

from __future__ import annotations

import math
import operator
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import reduce

import numpy as np

from offload_repro.produce.compiled.hlo_text import ELEMENT_BYTES
from offload_repro.produce.predicted.hlo_schedule import Event

NETWORK_ENDS = ("ring", "floor")
# The element types FSDP gathers weights in (bf16, or FP8 where the program quantises before the
# gather): a gather of them is charged at the predicted precision's bytes per value.
WEIGHT_ELEMENTS = ("bf16", "f8e4m3fn", "f8e5m2")


@dataclass(frozen=True)
class Rates:
    flops_per_s: float  # GEMMs
    to_host_bytes_per_s: float = math.inf
    from_host_bytes_per_s: float = math.inf
    collective_bytes_per_s: float = math.inf  # NVLink, bus bytes
    hbm_bytes_per_s: float = math.inf
    network_bytes_per_s: float = math.inf  # one NIC, one direction
    network_end: str = "ring"
    attention_share: float = 1.0  # attention's rate as a share of the GEMMs' (BF16 under FP4 weights)
    # bytes per value of a gathered weight at the precision predicted (FP4 weights: 0.5625), None: as
    # the program moves it
    weight_gather_bytes: float | None = None
    overlap: str = "scheduled"  # which of a program's schedules is replayed: as XLA scheduled it, or "ideal"

    def seconds(self, event: Event) -> float:
        if event.channel == "collective":
            network = event.network_ring if self.network_end == "ring" else event.network_floor
            scale = 1.0
            if self.weight_gather_bytes and event.what == "all-gather" and event.element in WEIGHT_ELEMENTS:
                scale = self.weight_gather_bytes / ELEMENT_BYTES[event.element]
            return scale * max(event.bytes / self.collective_bytes_per_s, network / self.network_bytes_per_s)
        rate = self.to_host_bytes_per_s if event.channel == "to_host" else self.from_host_bytes_per_s
        return event.bytes / rate if rate else math.inf

    def compute_seconds(self, event: Event, charge_unspent: bool) -> float:
        if event.unspent and event.unspent == event.flops and not charge_unspent:
            return 0.0  # wholly the dense MoE dispatch the source did not perform
        flops = event.flops if charge_unspent else event.flops - event.unspent
        attention = min(event.attention, flops)
        busy = (flops - attention) / self.flops_per_s + attention / (self.flops_per_s * self.attention_share)
        return max(busy, event.bytes / self.hbm_bytes_per_s)

    def compute_costs(self, work: ComputeWork, charge_unspent: bool) -> list[float]:
        """`compute_seconds` of every compute event of a computation at once: the same operations
        element by element (IEEE division, subtraction, maximum), so each value is the same float."""
        flops = work.flops if charge_unspent else work.flops - work.unspent
        attention = np.minimum(work.attention, flops)
        busy = (flops - attention) / self.flops_per_s + attention / (self.flops_per_s * self.attention_share)
        seconds = np.maximum(busy, work.bytes / self.hbm_bytes_per_s)
        if not charge_unspent:
            seconds[work.wholly_unspent] = 0.0  # wholly the dense MoE dispatch the source did not perform
        return seconds.tolist()

    def free(self, *channels: str) -> Rates:
        """The same rates with the named channels costing nothing: host, collective, network, hbm."""
        fields = {
            "host": ("to_host_bytes_per_s", "from_host_bytes_per_s"),
            "collective": ("collective_bytes_per_s", "network_bytes_per_s"),
            "network": ("network_bytes_per_s",),
            "hbm": ("hbm_bytes_per_s",),
        }
        return replace(self, **{name: math.inf for channel in channels for name in fields[channel]})


@dataclass(frozen=True)
class ComputeWork:
    """A computation's compute events as arrays, in schedule order (what `Rates.compute_costs` reads)."""

    flops: np.ndarray
    unspent: np.ndarray
    attention: np.ndarray
    bytes: np.ndarray
    wholly_unspent: np.ndarray


@dataclass(frozen=True)
class Plan:
    """A computation's events grouped for replay: each other event after the run of compute events
    before it (`runs[i]`: that run's slice of `work`), and the compute events after the last."""

    work: ComputeWork
    steps: list[tuple[int, int, Event]]
    tail: tuple[int, int]


def _plan_of(events: list[Event]) -> Plan:
    compute = [event for event in events if event.kind == "compute"]
    flops = np.array([e.flops for e in compute], dtype=np.int64)
    unspent = np.array([e.unspent for e in compute], dtype=np.int64)
    work = ComputeWork(
        flops=flops,
        unspent=unspent,
        attention=np.array([e.attention for e in compute], dtype=np.int64),
        bytes=np.array([e.bytes for e in compute], dtype=np.int64),
        wholly_unspent=(unspent != 0) & (unspent == flops),
    )
    steps, begin, end = [], 0, 0
    for event in events:
        if event.kind == "compute":
            end += 1
        else:
            steps.append((begin, end, event))
            begin = end
    return Plan(work, steps, (begin, end))


# A program's events are replayed many times (a calibration's bisection, each setting, each term):
# each computation's plan is made once, held with its event list so that the list's id stays its own.
_PLANS: OrderedDict[int, tuple[list[Event], Plan]] = OrderedDict()
_PLANS_KEPT = 4096


def plan(events: list[Event]) -> Plan:
    found = _PLANS.get(id(events))
    if found is not None and found[0] is events:
        _PLANS.move_to_end(id(events))
        return found[1]
    made = _plan_of(events)
    _PLANS[id(events)] = (events, made)
    if len(_PLANS) > _PLANS_KEPT:
        _PLANS.popitem(last=False)
    return made


def _advanced(now: float, costs: list[float], begin: int, end: int) -> float:
    """`now` plus each cost in turn, as a loop of `+=` adds them (the same floats, in the same order)."""
    return reduce(operator.add, costs[begin:end], now) if end > begin else now


class Replay:
    def __init__(self, events: dict[str, list[Event]], rates: Rates, charge_unspent: bool = False):
        self.events, self.rates, self.charge_unspent = events, rates, charge_unspent
        self.memo: dict[str, float] = {}

    def computation(self, name: str) -> float:
        if name not in self.memo:
            found = plan(self.events.get(name, []))
            costs = self.rates.compute_costs(found.work, self.charge_unspent)
            first, ends = self._once(found, costs, {})
            carried = {key: end - first for key, end in ends.items()}  # relative to the next iteration
            second, _ = self._once(found, costs, carried)
            self.memo[name] = second
        return self.memo[name]

    def _once(self, found: Plan, costs: list[float], carried: dict[str, float]) -> tuple[float, dict[str, float]]:
        now, free, ends = 0.0, {}, {}
        ready = dict(carried)
        for begin, end, event in found.steps:
            now = _advanced(now, costs, begin, end)
            if event.kind in ("start", "transfer"):
                start = max(now, free.get(event.channel, 0.0))
                done = start + self.rates.seconds(event)
                free[event.channel] = done
                if event.kind == "transfer":
                    now = done
                else:
                    ends[event.key], ready[event.key] = done, done
            elif event.kind == "done":
                now = max(now, ready.pop(event.key, now))
            elif event.kind == "loop":
                now += event.times * self.computation(event.body)
        return _advanced(now, costs, *found.tail), ends


def step_seconds(events: dict[str, list[Event]], entry: str, rates: Rates, charge_unspent: bool = False) -> float:
    return Replay(events, rates, charge_unspent).computation(entry)


TERMS = ("compute_s", "memory_bound_s", "exposed_host_copy_s", "exposed_collective_s", "exposed_network_s")


def breakdown(events: dict[str, list[Event]], entry: str, rates: Rates) -> dict[str, float]:
    """The step time and the terms that make it, which sum to it: each channel made free in turn
    (the network, then the collectives on NVLink, then the host copies, then HBM), what it added
    is its term; what is left is compute."""
    step = step_seconds(events, entry, rates)
    no_network = step_seconds(events, entry, rates.free("network"))
    no_collectives = step_seconds(events, entry, rates.free("collective"))
    no_host = step_seconds(events, entry, rates.free("collective", "host"))
    compute = step_seconds(events, entry, rates.free("collective", "host", "hbm"))
    return {
        "step_s": step,
        "compute_s": compute,
        "memory_bound_s": no_host - compute,
        "exposed_host_copy_s": no_collectives - no_host,
        "exposed_collective_s": no_network - no_collectives,
        "exposed_network_s": step - no_network,
    }


def calibrate(
    events: dict[str, list[Event]], entry: str, model_flops: float, published_flops_per_s: float, rates: Rates
) -> float:
    """The effective compute rate (FLOP/s) at which the program's predicted throughput (model
    FLOPs over step time) equals the published one, the transfer rates held; bisection in log space."""

    def achieved(flops_per_s: float) -> float:
        return model_flops / step_seconds(events, entry, replace(rates, flops_per_s=flops_per_s))

    low, high = 1e12, 1e18
    if step_seconds(events, entry, replace(rates, flops_per_s=low)) == 0:
        raise ValueError("the step takes no time at any compute rate: it has nothing to calibrate")
    if achieved(high) < published_flops_per_s:
        raise ValueError("the published throughput cannot be reached at any compute rate: transfers alone exceed it")
    return log_bisect(achieved, published_flops_per_s, low, high)


def log_bisect(rising: Callable[[float], float], goal: float, low: float, high: float) -> float:
    """Where `rising` (increasing in its argument) reaches `goal` between `low` and `high`, bisected in
    log space: 48 halvings of a range 1e6 wide leave a relative width below 1e-13."""
    for _ in range(48):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if rising(middle) < goal else (low, middle)
    return math.sqrt(low * high)
