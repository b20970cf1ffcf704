"""What a training rank (the process that imports JAX) can see of its software and hardware stack.

`gpu_stack()`: NVIDIA driver, CUDA driver API, CUDA runtime, cuDNN, NCCL and cuBLAS versions, and the
GPUs NVML lists, each with where it came from. `jax_environment()`: `jax.print_environment_info`, parsed.

Versions come from the libraries this process loaded (through NVML and JAX's CUDA plugin), not from
package metadata, so they are what ran; the one exception, NCCL's fallback to the nvidia-nccl wheel's
version, says so in its source. Call `gpu_stack()` after JAX has started its backends (`jax_environment()`
does): JAX's CUDA plugin preloads the NVIDIA libraries it uses, and asking earlier could load other copies.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import importlib
import re
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
    """Versions with their sources; the first answer for a key wins, the first failure is its reason."""

    def __init__(self) -> None:
        self.values: dict[str, str | None] = dict.fromkeys(VERSION_KEYS)
        self.sources: dict[str, str | None] = dict.fromkeys(VERSION_KEYS)
        self.failures: dict[str, str] = {}

    def put(self, key: str, value: str, source: str) -> None:
        if self.values[key] is None:
            self.values[key], self.sources[key] = value, source

    def fail(self, keys: tuple[str, ...] | str, why: str) -> None:
        for key in (keys,) if isinstance(keys, str) else keys:
            self.failures.setdefault(key, why)

    def attempt(self, key: str, source: str, read: Any) -> None:
        if self.values[key] is not None:
            return
        try:
            self.put(key, read(), source)
        except Exception as error:  # a library that is absent or refuses: recorded, never raised
            self.fail(key, f"{source}: {_one_line(error)}")

    def missing(self) -> dict[str, str]:
        return {key: why for key, why in self.failures.items() if self.values.get(key) is None}


def _import_nvml() -> Any:
    return importlib.import_module("pynvml")


def _read_nvml(facts: _Facts, import_nvml: Any) -> list[dict[str, Any]]:
    try:
        nvml = import_nvml()
        nvml.nvmlInit()
    except Exception as error:
        facts.fail(("nvidia_driver", "cuda_driver_api", "gpus"), f"no NVML: {_one_line(error)}")
        return []
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
        return gpus
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


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
    built: dict[str, str] = {}
    for key, name, form in (
        ("cuda_runtime", "cuda_runtime_build_version", cuda_version),
        ("cudnn", "cudnn_build_version", cudnn_version),
        ("cublas", "cublas_build_version", cublas_version),
    ):
        with contextlib.suppress(Exception):
            built[key] = form(int(getattr(versions, name)()))
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
    facts.attempt(
        "cuda_runtime", f"{helper}.cuda_runtime_get_version", lambda: cuda_version(versions.cuda_runtime_get_version())
    )
    facts.attempt("cudnn", f"{helper}.cudnn_get_version", lambda: cudnn_version(versions.cudnn_get_version()))
    facts.attempt("cublas", f"{helper}.cublas_get_version", lambda: cublas_version(versions.cublas_get_version()))
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
    """The GPU stack this process sees. Never raises: what cannot be read is None; `missing` says why
    for each such key and `reason` joins those causes (None when nothing is missing)."""
    try:
        return read_stack(_import_nvml, _import_cuda_versions, loaded_libraries)
    except Exception as error:  # a bug here must not cost a training run its result
        facts = _Facts()
        facts.fail((*VERSION_KEYS, "gpus"), f"stack.gpu_stack failed: {_one_line(error)}")
        return _stack_record(facts, [], None, dict.fromkeys(LIBRARY_FILES))


def read_stack(import_nvml: Any, import_versions: Any, libraries: Any) -> dict[str, Any]:
    """gpu_stack with its sources given: `import_nvml()` -> pynvml, `import_versions()` -> (JAX's
    `_versions` module, its package name), `libraries()` -> loaded_libraries()."""
    facts = _Facts()
    gpus = _read_nvml(facts, import_nvml)
    built = _read_cuda(facts, import_versions, libraries)
    # Paths read last: the calls above may have loaded libraries lazily.
    loaded = libraries()
    for key, library in (("cuda_runtime", "cudart"), ("cudnn", "cudnn"), ("cublas", "cublas"), ("nccl", "nccl")):
        source = facts.sources[key]
        if source and not source.startswith("package metadata") and loaded[library]:
            facts.sources[key] = f"{source} ({loaded[library]})"
    return _stack_record(facts, gpus, built, loaded)


def _stack_record(
    facts: _Facts, gpus: list[dict[str, Any]], built: dict[str, str] | None, loaded: dict[str, str | None]
) -> dict[str, Any]:
    missing = facts.missing()
    reasons = list(dict.fromkeys(missing.values()))
    return {
        **facts.values,
        "sources": facts.sources,
        "built_against": built,
        "gpus": gpus,
        "libraries": loaded,
        "missing": missing,
        "reason": "; ".join(reasons) or None,
    }


HEAD_FIELDS = ("jax", "jaxlib", "numpy", "python", "device info", "process_count", "platform")
NVIDIA_SMI_MARK = "\n\n$ nvidia-smi\n"


def _uname(text: str) -> dict[str, str]:
    found = re.fullmatch(r"uname_result\((.*)\)", text)
    if not found:
        raise ValueError(f"platform is not a uname_result: {text!r}")
    pairs = re.findall(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", found[1])
    if not pairs:
        raise ValueError(f"platform has no fields: {text!r}")
    return {key: ast.literal_eval(value) for key, value in pairs}


def parse_nvidia_smi(text: str) -> dict[str, Any]:
    """Driver and CUDA versions from the banner, and each GPU's index, name and total memory (MiB)."""
    banner = re.search(r"Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)", text)
    gpus: list[dict[str, Any]] = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        row = re.match(r"\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|", line)
        memory = re.search(r"(\d+)MiB\s*/\s*(\d+)MiB", lines[number + 1]) if row and number + 1 < len(lines) else None
        if row and memory:  # a GPU's first row; its second row holds used / total memory
            gpus.append({"index": int(row[1]), "name": row[2], "memory_total_mib": int(memory[2])})
    return {
        "driver_version": banner[1] if banner else None,
        "cuda_version": banner[2] if banner else None,
        "gpus": gpus,
    }


def parse_environment_info(text: str) -> dict[str, Any]:
    """The fields of `jax.print_environment_info(return_string=True)` as jax/_src/environment_info.py
    writes them (jax 0.6 on); raises ValueError for any other layout."""
    head, smi_mark, smi = text.partition(NVIDIA_SMI_MARK)
    fields: dict[str, str] = {}
    env: dict[str, str] = {}
    last_env = None
    for line in head.splitlines():
        found = re.match(r"(jax|jaxlib|numpy|python|device info|process_count|platform): *(.*)$", line)
        name, equals, value = line.partition("=")
        if found and found[1] not in fields:
            fields[found[1]] = found[2].strip()
        elif equals and name.startswith(("JAX_", "XLA_")):
            env[name] = value
            last_env = name
        elif last_env is not None:  # a variable's value that spans lines
            env[last_env] += "\n" + line
        elif line.strip():
            raise ValueError(f"unexpected line {line!r}")
    absent = [name for name in HEAD_FIELDS if name not in fields]
    if absent:
        raise ValueError(f"no {', '.join(repr(name + ':') for name in absent)} line")
    # "KIND-COUNT, LOCAL local devices" (plus a stray '"' that jax prints)
    device = re.fullmatch(r'(.+)-(\d+), (\d+) local devices"?', fields["device info"])
    if not device:
        raise ValueError(f"device info not understood: {fields['device info']!r}")
    return {
        "jax": fields["jax"],
        "jaxlib": fields["jaxlib"],
        "numpy": fields["numpy"],
        "python": fields["python"],
        "device_info": {
            "device_kind": device[1],
            "device_count": int(device[2]),
            "local_device_count": int(device[3]),
        },
        "process_count": int(fields["process_count"]),
        "platform": _uname(fields["platform"]),
        "env": env,
        "nvidia_smi": parse_nvidia_smi(smi) if smi_mark else None,
        "text": text,
    }


def jax_environment() -> dict[str, Any]:
    """`jax.print_environment_info`, parsed (only `text` and `parse_error` when its layout is not
    understood), plus the first device's platform and kind and the device and process counts.

    Starts JAX's backends: in a multi-process run, call it after `jax.distributed.initialize`.
    """
    import jax

    text = jax.print_environment_info(return_string=True) or ""
    try:
        facts = parse_environment_info(text)
    except ValueError as error:
        facts = {"text": text, "parse_error": _one_line(error)}
    device = jax.devices()[0]
    facts["devices"] = {
        "platform": device.platform,
        "device_kind": device.device_kind,
        "device_count": jax.device_count(),
        "local_device_count": jax.local_device_count(),
        "process_count": jax.process_count(),
    }
    return facts
