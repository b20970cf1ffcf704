"""The source's calibration of a family at one precision, as carried to other hardware: the share of
its own hardware's peak the source's rows fit at that precision (results/predicted/<calibration
target>.json, `calibration`), or why it gives none. A share of one precision's peak is never
carried to another: what the source calibrates at NVFP4 says nothing of a BF16 or FP8 run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from offload_repro.produce.predicted.target_rates import settings


@dataclass(frozen=True)
class Carried:
    """The source's calibration at one precision, or why there is none (`none`, in words)."""

    calibrated_on: str | None = None  # <calibration target>/<row>
    calibration: dict[str, Any] | None = None  # its rate at every setting (`by_setting`)
    share_of_peak: float | None = None  # at the central setting
    none: str | None = None


def source_calibration(source: dict[str, Any] | None, family: str, precision: str, speed: dict[str, Any]) -> Carried:
    """The calibration the source's rows give `family` at `precision`: on the family's default row
    (experiments/speed.yaml, calibration.rows) where it calibrates at that precision, else the first
    row that does, as the source's own predictions take it; or why none is carried."""
    if source is None:
        return Carried(none="no prediction of the source's hardware was given")
    by_precision = (source.get("calibration") or {}).get(family) or {}
    if calibrated := by_precision.get(precision):
        default = speed["calibration"]["rows"].get(family)
        row = default if default in calibrated else next(iter(calibrated))
        central = tuple(settings(speed)[0])
        share = next(
            s["share_of_peak"]
            for s in calibrated[row]["by_setting"]
            if (s["link_level"], s["network_end"], s["overlap"]) == central
        )
        return Carried(f"{source['target']}/{row}", calibrated[row], share)
    ruled = next(
        (r for r in source.get("ruled_out_precisions") or [] if (r["family"], r["precision"]) == (family, precision)),
        None,
    )
    if ruled:
        # the precision the source's rows are taken at instead: the family's default
        taken = next(iter(speed["precision"]["families"].get(family, [])), None)
        return Carried(
            none=f"the source's {family} throughputs at {precision} would need {ruled['low_share']:.0%} or more of"
            f" {source['target']}'s {precision} peak, so they are taken as {taken}, and a share of the {taken} peak"
            f" is not carried to {precision}"
        )
    if by_precision:
        return Carried(
            none=f"the source's rows calibrate {family} at {', '.join(by_precision)}, not at {precision}, and a share"
            " of one precision's peak is not carried to another"
        )
    return Carried(none=f"the source's rows give no calibration for {family}")
