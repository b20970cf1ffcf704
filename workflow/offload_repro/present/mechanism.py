"""What offloading does to a program, as compiled: each offload row beside the row that saves the
same tensors on the device at the same micro batch, their device memory per device and what the
offload row holds on the host. The mechanism the post is about, stated on the first screen; every
number is an observation of the evidence table."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import Row
from offload_repro.judge import metric_names as names
from offload_repro.present.lookup import Lookup


def saved_on_device(row: Row, rows: list[Row]) -> Row | None:
    """The row of the same table and micro batch that saves on the device every tensor `row` offloads."""
    offloaded = set(row.tensors("offload"))
    return next(
        (
            other
            for other in rows
            if other.table == row.table
            and other.per_device_batch_size == row.per_device_batch_size
            and offloaded
            and offloaded <= set(other.tensors("device"))
        ),
        None,
    )


def lines(rows: list[Row], lookup: Lookup, evidence: str = "compiled") -> list[dict[str, Any]]:
    """Per device-save row, the offload rows that offload what it saves, where both programs have a
    figure: what each holds on the device and the host, and what it takes off."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        saving = saved_on_device(row, rows)
        if saving is None:
            continue
        offloaded_gib = lookup.value(row.id, evidence, names.DEVICE_GIB)
        saved_gib = lookup.value(saving.id, evidence, names.DEVICE_GIB)
        if offloaded_gib is None or saved_gib is None:
            continue
        line = found.setdefault(
            saving.id,
            {
                "saving": saving,
                "tensors": row.tensors("offload"),
                "saved_gib": saved_gib,
                "saving_published_outcome": saving.published["outcome"],
                "offloads": [],
            },
        )
        line["offloads"].append(
            {
                "row": row,
                "offloaded_gib": offloaded_gib,
                "taken_off_gib": saved_gib - offloaded_gib,
                "host_gib": lookup.value(row.id, evidence, names.HOST_GIB),
                "published_gib": row.published.get("device_gib"),
            }
        )
    return list(found.values())
