"""What one collective of a compiled program moves, and over which links, as NCCL moves it.

Bytes. A collective's buffer is what nccl-tests calls its size S (nccl-tests, doc/PERFORMANCE.md):
the gathered result of an all-gather (its operands times the group size), the operands of a
reduce-scatter, all-reduce, all-to-all or collective-permute. A combined collective carries
several operands and moves all of them. XLA prints an async collective as `*-start` with a shape
of (operands, results) and a synchronous one with its result only (a reduce-scatter's result is
one shard), so the operands are read from the shapes of the instructions they name.

Time on NVLink. nccl-tests' bus bandwidth is what each rank's link carries: S x (n-1)/n for
all-gather, reduce-scatter and all-to-all, S x 2(n-1)/n for all-reduce, S for a permute
("bus bandwidth reflects the speed of the hardware bottleneck"). Those are the bus bytes.

Traffic between NVLink domains. A group that spans domains (the 128 GPUs of two NVL72 racks) also
sends part of its buffer over the scale-out network, one NIC per GPU. Two ends of a band:
- ring: a ring visits one domain's members, then the other's, so it crosses the boundary once in
  each direction, and that crossing carries the ring's whole per-link traffic (the bus bytes);
  NCCL splits the buffer over its channels, each crossing on its own NIC, so each NIC carries
  the bus bytes over the number of NICs that carry crossings (the channels, at most one per
  member on the smaller side);
- floor (hierarchical): only the other domain's share of the buffer must cross, spread over every
  member's NIC on the receiving side; an all-reduce crosses twice (reduce-scatter, all-gather).
An all-to-all sends each member's outside share through its own NIC at both ends; a permute sends
its whole buffer through the sender's NIC when a pair crosses.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache

import numpy as np

from offload_repro.produce.compiled.hlo_text import ARRAY, parse_dims, shape_bytes

REPLICA_IOTA = re.compile(r"replica_groups=\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
REPLICA_LISTS = re.compile(r"replica_groups=\{((?:\{[\d,]*\},?)+)\}")
REPLICA_MESH = re.compile(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}")
PAIRS = re.compile(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}")
COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")
# nccl-tests doc/PERFORMANCE.md: bus bytes per byte of the collective's size S, for a group of n.
BUS_FACTOR = {
    "all-gather": lambda n: (n - 1) / n,
    "reduce-scatter": lambda n: (n - 1) / n,
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "all-to-all": lambda n: (n - 1) / n,
    "collective-permute": lambda n: 1.0,
}


@dataclass(frozen=True)
class Collective:
    """One collective instruction, per device and per run."""

    kind: str
    buffer_bytes: int  # nccl-tests' size S
    group: int  # members of each replica group (the largest group)
    bus_bytes: float  # what each member's NVLink carries
    network_ring_bytes: float = 0.0  # per NIC, ring end (0: the group stays in one domain)
    network_floor_bytes: float = 0.0  # per NIC, hierarchical end
    element: str = ""  # the element type of its first operand (bf16 for weights under FSDP)


def kind_of(op: str) -> str | None:
    base = op.removesuffix("-start")
    return base if base in COLLECTIVES else None


@cache  # one parse per distinct attribute text; callers only read the groups
def replica_groups(attributes: str) -> list[list[int]] | None:
    """Each replica group's device ids, in any of the three forms XLA prints them: a device mesh
    and the axes a group spans (`mesh['a'=2,'b'=64] {'b'}`, devices numbered row-major over the
    mesh), an iota reshaped and transposed (`[64,2]<=[2,64]T(1,0)`), or the groups listed."""
    if mesh := REPLICA_MESH.search(attributes):
        axes = [(name, int(size)) for name, size in re.findall(r"'(\w+)'=(\d+)", mesh.group(1))]
        spanned = [name for name in re.findall(r"'(\w+)'", mesh.group(2))]
        names = [name for name, _ in axes]
        devices = np.arange(math.prod(size for _, size in axes)).reshape([size for _, size in axes] or [1])
        inner = [names.index(name) for name in spanned if name in names]
        outer = [axis for axis in range(len(axes)) if axis not in inner]
        size = math.prod(axes[axis][1] for axis in inner)
        return devices.transpose(outer + inner).reshape(-1, size).tolist()
    if iota := REPLICA_IOTA.search(attributes):
        count, size = int(iota.group(1)), int(iota.group(2))
        devices = np.arange(count * size).reshape(parse_dims(iota.group(3)))
        if iota.group(4):
            devices = devices.transpose(parse_dims(iota.group(4)))
        return devices.reshape(count, size).tolist()
    if listed := REPLICA_LISTS.search(attributes):
        return [parse_dims(group) for group in re.findall(r"\{([\d,]*)\}", listed.group(1))]
    return None


@cache
def _network_shares(
    attributes: str, kind: str, devices_per_domain: int, channels: int, nics_per_gpu: int = 1
) -> tuple[float, float]:
    """(ring, floor): the bytes per NIC per byte of buffer, for the worst group of a collective."""
    if kind == "collective-permute":
        pairs = PAIRS.search(attributes)
        crossing = pairs and any(
            int(a) // devices_per_domain != int(b) // devices_per_domain
            for a, b in re.findall(r"\{(\d+),(\d+)\}", pairs.group(1))
        )
        return (1.0, 1.0) if crossing else (0.0, 0.0)
    groups = replica_groups(attributes)
    ring = floor = 0.0
    for group in groups or []:
        members = Counter(device // devices_per_domain for device in group)  # per domain
        if len(members) < 2:
            continue  # one domain: NVLink only
        n = len(group)
        if kind == "all-to-all":  # each member sends its outside share through its own NIC
            share = max((n - inside) / n for inside in members.values()) / nics_per_gpu
            ring, floor = max(ring, share), max(floor, share)
            continue
        crossings = 2 if kind == "all-reduce" else 1
        # ring: the bus bytes over the NICs that carry crossings (one per channel, at most one
        # per member on the smaller side)
        nics = max(1, min(channels, min(members.values()) * nics_per_gpu))
        ring = max(ring, BUS_FACTOR[kind](n) / nics)
        # floor: what a domain lacks (the others' share) over its members' NICs
        floor = max(floor, max(crossings * (n - inside) / n / (inside * nics_per_gpu) for inside in members.values()))
    return ring, floor


def collective(
    op: str,
    operand_shapes: list[str],
    attributes: str,
    devices_per_domain: int | None = None,
    channels: int = 1,
    nics_per_gpu: int = 1,
) -> Collective | None:
    """The collective an instruction is, from its op, its operands' shapes and its attributes;
    `devices_per_domain` None: one NVLink domain (no network)."""
    kind = kind_of(op)
    if kind is None:
        return None
    group = max(map(len, replica_groups(attributes) or []), default=2)  # the largest; 2 where XLA prints none
    operands = sum(shape_bytes(shape) for shape in operand_shapes)
    size = operands * group if kind == "all-gather" else operands  # nccl-tests' S: an all-gather's result
    ring = floor = 0.0
    if devices_per_domain:
        ring_share, floor_share = _network_shares(attributes, kind, devices_per_domain, channels, nics_per_gpu)
        ring, floor = size * ring_share, size * floor_share
    arrays = [dtype for shape in operand_shapes for dtype, _, _ in ARRAY.findall(shape)]
    bus = size * BUS_FACTOR[kind](max(group, 2))
    return Collective(kind, size, group, bus, ring, floor, arrays[0] if arrays else "")
