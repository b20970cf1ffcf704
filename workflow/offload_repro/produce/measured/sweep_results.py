"""What a sweep measured on a device, kept as data: each point's record with the log lines its numbers
come from, and its scheduled HLO, under experiments/device-results/<target>/sweep/, so that any machine
can predict the points and set the predictions beside them without the device.

    python -m offload_repro.produce.measured.sweep_results TARGET SWEEP.tar.gz [MORE.tar.gz ...]

Each archive is what envs/device/<target>-sweep.sh left in $OUT (results/<target>/sweep/: points/,
programs/ and each repeat's train.log). A later archive's record of a point replaces an earlier one's,
unless it holds fewer repeats (a call that stopped early does not undo one that finished). Every record
is validated against its schema before anything is written.
"""

from __future__ import annotations

import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from offload_repro.core.results import read_result, write_result
from offload_repro.produce.measured.device_results import KEPT_DIR, log_lines


def with_log_lines(record: dict[str, Any], sweep: Path) -> dict[str, Any]:
    """The point's record with each repeat's log lines, read where the runner wrote its log."""
    found = []
    for repeat in record["repeat_runs"]:
        log = sweep / "work" / record["point"] / f"repeat-{repeat['repeat']}" / "train.log"
        if log.exists():
            text = log.read_text(encoding="utf-8", errors="replace")
            found.append({"log": str(log.relative_to(sweep.parents[2])), **log_lines(text)})
    return record | {"log_lines": found}


def keep(target: str, archives: list[Path], kept_dir: Path = KEPT_DIR) -> list[Path]:
    """Validate every point of the archives, then write them and their programs under `kept_dir`/`target`/sweep/."""
    points: dict[str, tuple[dict[str, Any], Path | None]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for number, archive in enumerate(archives):
            unpacked = Path(scratch) / str(number)
            with tarfile.open(archive) as tar:
                tar.extractall(unpacked, filter="data")
            sweep = unpacked / "results" / target / "sweep"
            if not (sweep / "points").is_dir():
                raise ValueError(f"{archive}: holds no results/{target}/sweep/points/")
            for path in sorted((sweep / "points").glob("*.json")):
                record = with_log_lines(read_result(path, "sweep-point"), sweep)
                if record["target"] != target:
                    raise ValueError(f"{archive}: {path.name}: a point of target '{record['target']}', not '{target}'")
                earlier = points.get(record["point"])
                if earlier and len(earlier[0]["repeat_runs"]) > len(record["repeat_runs"]):
                    continue
                hlo = sweep / record["hlo"] if record["hlo"] else None
                if hlo is not None and not hlo.exists():
                    raise ValueError(f"{archive}: {path.name}: field 'hlo': {record['hlo']} is not in the archive")
                points[record["point"]] = (record, hlo)
        written = []
        out = kept_dir / target / "sweep"
        for point, (record, hlo) in sorted(points.items()):
            written.append(out / "points" / f"{point}.json")
            write_result(written[-1], "sweep-point", record)
            if hlo is not None:
                (out / "programs").mkdir(parents=True, exist_ok=True)
                written.append(out / record["hlo"])
                shutil.copyfile(hlo, written[-1])
    return written


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for path in keep(sys.argv[1], [Path(p) for p in sys.argv[2:]]):
        print(path)
