"""Write XLA's GPU target descriptions, as embedded in the installed jax CUDA plugin, to files.

XLA ships a GpuTargetConfigProto text per supported GPU inside xla_cuda_plugin.so; each is a
NUL-terminated string holding `gpu_device_info {` and `device_description_str: "<name>"`.
Usage: .venv/bin/python envs/gpu-targets/extract.py "NVIDIA GB200" "NVIDIA H200 141GB HBM3e" ...
"""

from __future__ import annotations

import mmap
import re
import sys
from importlib.util import find_spec
from pathlib import Path

HERE = Path(__file__).resolve().parent


def plugin_library() -> Path:
    spec = find_spec("jax_plugins.xla_cuda12")
    if spec is None or spec.origin is None:
        raise SystemExit("jax-cuda12-plugin is not installed (envs/requirements-gpu-compile.txt)")
    return Path(spec.origin).parent / "xla_cuda_plugin.so"


def descriptions(library: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    with open(library, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        position = 0
        while (hit := data.find(b'device_description_str: "', position)) >= 0:
            start, end = data.rfind(b"\0", 0, hit) + 1, data.find(b"\0", hit)
            text = data[start:end]
            name = re.search(rb'device_description_str: "([^"]*)"', text)
            if name and b"gpu_device_info" in text:
                found[name.group(1).decode()] = text
            position = end
    return found


def file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") + ".txtpb"


if __name__ == "__main__":
    available = descriptions(plugin_library())
    for wanted in sys.argv[1:]:
        if wanted not in available:
            raise SystemExit(f"{wanted!r} not in the plugin; it has: {sorted(available)}")
        (HERE / file_name(wanted)).write_bytes(available[wanted] + b"\n")
        print(HERE / file_name(wanted))
