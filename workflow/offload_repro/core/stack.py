"""What a training rank (the process that imports JAX) can see of its software and hardware stack.

`gpu_stack()`: NVIDIA driver, CUDA driver API, CUDA runtime, cuDNN, NCCL and cuBLAS versions, and the
GPUs (index, name, total memory, UUID), each with where it came from: NVML, or nvidia-smi's CSV query
where NVML does not answer. `jax_environment()`: JAX's, jaxlib's, NumPy's and Python's versions, the
host's uname, the JAX_/XLA_ environment variables and the devices JAX sees, read from the libraries'
own attributes (the facts `jax.print_environment_info` prints, without parsing its text; the GPUs and
driver that text appends from nvidia-smi are `gpu_stack()`'s).

Versions come from the libraries this process loaded (through NVML and JAX's CUDA plugin), not from
package metadata, so they are what ran; the one exception, NCCL's fallback to the nvidia-nccl wheel's
version, says so in its source. Call `gpu_stack()` after JAX has started its backends (`jax_environment()`
does): JAX's CUDA plugin preloads the NVIDIA libraries it uses, and asking earlier could load other copies.
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import importlib
import io
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from importlib import metadata
from types import ModuleType
from typing import Any

VERSION_KEYS = ("nvidia_driver", "cuda_driver_api", "cuda_runtime", "cudnn", "nccl", "cublas")
# Read from the CUDA libraries themselves: only meaningful where a CUDA driver is present.
LIBRARY_KEYS = ("cuda_runtime", "cudnn", "nccl", "cublas")
# JAX's own search order for its CUDA helpers (jax/_src/lib/__init__.py, jax_plugins/xla_cuda12).
PLUGIN_PACKAGES = ("jax_cuda13_plugin", "jax_cuda12_plugin", "jaxlib.cuda")
# Shared objects whose loaded path is recorded, so a reviewer sees which copy answered.
LIBRARY_FILES = {
    "cuda": "libcuda.so",
    "cudart": "libcudart.so",
    "cudnn": "libcudnn.so",
    "cublas": "libcublas.so",
    "nccl": "libnccl.so",
    "nvml": "libnvidia-ml.so",
}
NCCL_PACKAGES = ("nvidia-nccl-cu13", "nvidia-nccl-cu12")
# nvidia-smi's --query-gpu fields, in the order its CSV answer lists them.
NVIDIA_SMI_FIELDS = ("index", "name", "memory.total", "uuid", "driver_version")
NVIDIA_SMI_WAIT_SECONDS = 30  # a node whose driver hangs must not hold the rank's record back
MIB = 1 << 20


def cuda_version(code: int) -> str:
    """cudaRuntimeGetVersion / cuDriverGetVersion / NVML: 1000 * major + 10 * minor."""
    return f"{code // 1000}.{code % 1000 // 10}"


def cudnn_version(code: int) -> str:
    """CUDNN_VERSION: 10000 * major + 100 * minor + patch from cuDNN 9, 1000 * major + ... before."""
    scale = 10000 if code >= 90000 else 1000
    return f"{code // scale}.{code % scale // 100}.{code % 100}"


def cublas_version(code: int) -> str:
    """CUBLAS_VERSION: 10000 * major + 100 * minor + patch."""
    return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"


def nccl_version(code: int) -> str:
    """NCCL_VERSION_CODE: 10000 * major + 100 * minor + patch from NCCL 2.9, 1000 * major + ... before."""
    scale = 10000 if code >= 20900 else 1000
    return f"{code // scale}.{code % scale // 100}.{code % 100}"


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:300]


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value  # older pynvml returns bytes


def loaded_libraries(maps: str | None = None) -> dict[str, str | None]:
    """Path of each LIBRARY_FILES library mapped into this process (Linux /proc/self/maps), else None."""
    if maps is None:
        try:
            with open("/proc/self/maps", encoding="utf-8") as handle:
                maps = handle.read()
        except OSError:
            maps = ""
    paths = [line.split(maxsplit=5)[5] for line in maps.splitlines() if len(line.split(maxsplit=5)) == 6]
    found: dict[str, str | None] = dict.fromkeys(LIBRARY_FILES)
    for name, prefix in LIBRARY_FILES.items():
        found[name] = next((p for p in paths if p.rsplit("/", 1)[-1].startswith(prefix + ".")), None)
    return found


class _Facts:
    """Versions and GPUs with their sources; the first answer for a key wins. Every failure is kept, so
    a key that no source answered says why each source did not."""

    def __init__(self) -> None:
        self.values: dict[str, str | None] = dict.fromkeys(VERSION_KEYS)
        self.sources: dict[str, str | None] = dict.fromkeys((*VERSION_KEYS, "gpus"))
        self.gpus: list[dict[str, Any]] = []
        self.failures: dict[str, list[str]] = {}

    def put(self, key: str, value: str, source: str) -> None:
        if self.values[key] is None:
            self.values[key], self.sources[key] = value, source

    def put_gpus(self, gpus: list[dict[str, Any]], source: str) -> None:
        if gpus and not self.gpus:
            self.gpus, self.sources["gpus"] = gpus, source

    def fail(self, keys: tuple[str, ...] | str, why: str) -> None:
        for key in (keys,) if isinstance(keys, str) else keys:
            reasons = self.failures.setdefault(key, [])
            if why not in reasons:
                reasons.append(why)

    def attempt(self, key: str, source: str, read: Any) -> None:
        if self.values[key] is not None:
            return
        try:
            self.put(key, read(), source)
        except Exception as error:  # a library that is absent or refuses: recorded, never raised
            self.fail(key, f"{source}: {_one_line(error)}")

    def _unanswered(self) -> list[str]:
        answered = {**self.values, "gpus": self.gpus or None}
        return [key for key in self.failures if answered.get(key) is None]

    def missing(self) -> dict[str, str]:
        return {key: "; ".join(self.failures[key]) for key in self._unanswered()}

    def reasons(self) -> list[str]:
        """The causes behind the missing keys, each once."""
        return list(dict.fromkeys(why for key in self._unanswered() for why in self.failures[key]))


def _read_nvml(facts: _Facts, import_nvml: Any) -> None:
    try:
        nvml = import_nvml()
        nvml.nvmlInit()
    except Exception as error:
        facts.fail(("nvidia_driver", "cuda_driver_api", "gpus"), f"no NVML: {_one_line(error)}")
        return
    try:
        facts.attempt(
            "nvidia_driver", "pynvml nvmlSystemGetDriverVersion", lambda: _text(nvml.nvmlSystemGetDriverVersion())
        )
        facts.attempt(
            "cuda_driver_api",
            "pynvml nvmlSystemGetCudaDriverVersion",
            lambda: cuda_version(int(nvml.nvmlSystemGetCudaDriverVersion())),
        )
        gpus: list[dict[str, Any]] = []
        try:
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                gpu = {
                    "index": index,
                    "name": _text(nvml.nvmlDeviceGetName(handle)),
                    "memory_total_bytes": int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
                    "uuid": None,
                }
                with contextlib.suppress(Exception):
                    gpu["uuid"] = _text(nvml.nvmlDeviceGetUUID(handle))
                gpus.append(gpu)
        except Exception as error:
            facts.fail("gpus", f"pynvml device query: {_one_line(error)}")
            return
        facts.put_gpus(gpus, "pynvml nvmlDeviceGetName, nvmlDeviceGetMemoryInfo, nvmlDeviceGetUUID")
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def query_nvidia_smi() -> str:
    """nvidia-smi's CSV answer for NVIDIA_SMI_FIELDS, one GPU a line; raises where it gives none."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        raise FileNotFoundError("not on PATH")
    command = [binary, f"--query-gpu={','.join(NVIDIA_SMI_FIELDS)}", "--format=csv,noheader,nounits"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=NVIDIA_SMI_WAIT_SECONDS, check=False)
    if done.returncode != 0:  # e.g. 9: it cannot reach the driver (said on stdout)
        raise RuntimeError(f"exit {done.returncode}: {(done.stderr + done.stdout).strip()}")
    return done.stdout


def _mib_bytes(value: str) -> int | None:
    return int(value) * MIB if value.isdigit() else None  # "[N/A]" where a GPU has no own memory size


def parse_gpu_csv(text: str) -> tuple[list[dict[str, Any]], str]:
    """The GPUs (NVML's record shape; memory to the MiB) and the driver version of query_nvidia_smi's answer."""
    rows = [row for row in csv.reader(io.StringIO(text), skipinitialspace=True) if row]
    if not rows:
        raise ValueError("no GPU listed")
    for row in rows:
        if len(row) != len(NVIDIA_SMI_FIELDS):
            raise ValueError(f"{len(row)} fields where {len(NVIDIA_SMI_FIELDS)} were asked for: {row!r}")
    drivers = {row[4] for row in rows}
    if len(drivers) != 1:  # one driver per node: anything else is a line misread
        raise ValueError(f"driver versions {sorted(drivers)} on one node")
    gpus = [
        {"index": int(index), "name": name, "memory_total_bytes": _mib_bytes(memory), "uuid": uuid}
        for index, name, memory, uuid, _driver in rows
    ]
    return gpus, drivers.pop()


def _read_nvidia_smi(facts: _Facts, query: Callable[[], str]) -> None:
    """The driver and GPUs again, for a rank where NVML (pynvml) did not answer."""
    source = f"nvidia-smi --query-gpu={','.join(NVIDIA_SMI_FIELDS)}"
    try:
        gpus, driver = parse_gpu_csv(query())
    except Exception as error:
        facts.fail(("nvidia_driver", "gpus"), f"nvidia-smi: {_one_line(error)}")
        return
    facts.put("nvidia_driver", driver, source)
    facts.put_gpus(gpus, source + " (memory in whole MiB)")


def _import_cuda_versions() -> tuple[ModuleType, str]:
    errors = []
    for package in PLUGIN_PACKAGES:
        try:
            return importlib.import_module(f"{package}._versions"), package
        except ImportError as error:
            errors.append(f"{package}: {_one_line(error)}")
    raise ImportError("; ".join(errors))


def _nccl_get_version(path: str) -> str:
    code = ctypes.c_int()
    status = ctypes.CDLL(path).ncclGetVersion(ctypes.byref(code))
    if status != 0:
        raise RuntimeError(f"ncclGetVersion returned ncclResult {status}")
    return nccl_version(code.value)


def _read_cuda(facts: _Facts, import_versions: Any, libraries: Any) -> dict[str, str] | None:
    """Versions through JAX's CUDA plugin (and ncclGetVersion); returns what the plugin was built against."""
    try:
        versions, package = import_versions()
    except Exception as error:
        facts.fail(("cuda_driver_api", *LIBRARY_KEYS), f"no JAX CUDA plugin: {_one_line(error)}")
        return None
    helper = f"{package}._versions"
    # each library's version as built against and as loaded: <key>_build_version, <key>_get_version
    forms = {"cuda_runtime": cuda_version, "cudnn": cudnn_version, "cublas": cublas_version}
    built: dict[str, str] = {}
    for key, form in forms.items():
        with contextlib.suppress(Exception):
            built[key] = form(int(getattr(versions, f"{key}_build_version")()))
    try:
        driver = int(versions.cuda_driver_get_version())
    except Exception as error:
        driver, why = 0, f"{helper}.cuda_driver_get_version: {_one_line(error)}"
    else:
        why = f"{helper}.cuda_driver_get_version gave {driver}"
    if driver <= 0:  # no libcuda: the rank runs no CUDA, so library versions would describe nothing that ran
        facts.fail(("cuda_driver_api", *LIBRARY_KEYS), f"no CUDA driver: {why}")
        return built
    facts.put("cuda_driver_api", cuda_version(driver), f"{helper}.cuda_driver_get_version")
    for key, form in forms.items():
        name = f"{key}_get_version"
        facts.attempt(key, f"{helper}.{name}", lambda: form(getattr(versions, name)()))  # noqa: B023 (called at once)
    nccl_path = libraries()["nccl"]
    if nccl_path:  # the copy XLA loaded; asking any other libnccl would not say what ran
        facts.attempt("nccl", "ncclGetVersion", lambda: _nccl_get_version(nccl_path))
    for package_name in NCCL_PACKAGES:
        with contextlib.suppress(Exception):
            facts.put(
                "nccl",
                metadata.version(package_name),
                f"package metadata {package_name} (libnccl not loaded in this process: installed, not shown to run)",
            )
    facts.fail("nccl", f"libnccl not loaded in this process and none of {', '.join(NCCL_PACKAGES)} installed")
    return built


def gpu_stack() -> dict[str, Any]:
    """The GPU stack this process sees. Never raises: what cannot be read is None (`gpus`: empty);
    `missing` says why for each such key and `reason` joins those causes (None when nothing is missing)."""
    try:
        return read_stack(lambda: importlib.import_module("pynvml"), _import_cuda_versions, loaded_libraries)
    except Exception as error:  # a bug here must not cost a training run its result
        facts = _Facts()
        facts.fail((*VERSION_KEYS, "gpus"), f"stack.gpu_stack failed: {_one_line(error)}")
        return _stack_record(facts, None, dict.fromkeys(LIBRARY_FILES))


def read_stack(
    import_nvml: Any, import_versions: Any, libraries: Any, query_gpus: Callable[[], str] = query_nvidia_smi
) -> dict[str, Any]:
    """gpu_stack with its sources given: `import_nvml()` -> pynvml, `import_versions()` -> (JAX's
    `_versions` module, its package name), `libraries()` -> loaded_libraries(), `query_gpus()` ->
    query_nvidia_smi()."""
    facts = _Facts()
    _read_nvml(facts, import_nvml)
    if facts.values["nvidia_driver"] is None or not facts.gpus:
        _read_nvidia_smi(facts, query_gpus)
    built = _read_cuda(facts, import_versions, libraries)
    # Paths read last: the calls above may have loaded libraries lazily.
    loaded = libraries()
    for key, library in (("cuda_runtime", "cudart"), ("cudnn", "cudnn"), ("cublas", "cublas"), ("nccl", "nccl")):
        source = facts.sources[key]
        if source and not source.startswith("package metadata") and loaded[library]:
            facts.sources[key] = f"{source} ({loaded[library]})"
    return _stack_record(facts, built, loaded)


def _stack_record(facts: _Facts, built: dict[str, str] | None, loaded: dict[str, str | None]) -> dict[str, Any]:
    return {
        **facts.values,
        "sources": facts.sources,
        "built_against": built,
        "gpus": facts.gpus,
        "libraries": loaded,
        "missing": facts.missing(),
        "reason": "; ".join(facts.reasons()) or None,
    }


def jax_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The JAX_ and XLA_ variables, by name: the settings JAX and XLA read from the environment."""
    return {name: environ[name] for name in sorted(environ) if name.startswith(("JAX_", "XLA_"))}


def jax_environment() -> dict[str, Any]:
    """JAX's view of its installation and host, from structured sources: `jax`, `jaxlib`, `numpy`
    (each package's version attribute), `python` (sys.version), `platform` (platform.uname() as a
    dict), `env` (jax_variables) and `devices` (platform and kind of the first device, device, local
    device and process counts). The GPUs and driver are gpu_stack()'s record, not repeated here.

    Starts JAX's backends: in a multi-process run, call it after `jax.distributed.initialize`.
    """
    import jax
    import jaxlib.version
    import numpy

    first = jax.devices()[0]  # stands for them all, as in JAX's own environment report
    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.version.__version__,
        "numpy": numpy.__version__,
        "python": sys.version,
        "platform": platform.uname()._asdict(),
        "env": jax_variables(os.environ),
        "devices": {
            "platform": first.platform,
            "device_kind": first.device_kind,
            "device_count": jax.device_count(),
            "local_device_count": jax.local_device_count(),
            "process_count": jax.process_count(),
        },
    }
