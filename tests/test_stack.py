"""The stack a rank records: real jax environment info on this machine, real-format GPU text, and the
GPU version readers with NVML and JAX's CUDA helpers standing in where no GPU is present."""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from offload_repro.core import stack

# jax/_src/environment_info.py's layout (the stray '"' after "local devices" is jax's), on an
# 8 x H100 node, followed by nvidia-smi 550's table as print_environment_info appends it.
GPU_ENVIRONMENT_INFO = """\
jax:    0.12.0.1
jaxlib: 0.12.0.1
numpy:  2.5.5
python: 3.12.3 (main, Feb  4 2025, 14:48:35) [GCC 13.3.0]
device info: NVIDIA H100 80GB HBM3-16, 8 local devices"
process_count: 2
platform: uname_result(system='Linux', node='gpu-node-017', release='5.15.0-1071-nvidia', version='#72-Ubuntu SMP Thu Oct  3 19:57:42 UTC 2024', machine='x86_64')
XLA_FLAGS=--xla_gpu_enable_latency_hiding_scheduler=true --xla_gpu_memory_limit_slop_factor=95
JAX_COORDINATOR_ADDRESS=gpu-node-017:3389

$ nvidia-smi
Mon Nov  4 11:56:43 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.127.05             Driver Version: 550.127.05     CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
| N/A   31C    P0            118W /  700W |   62215MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off |                    0 |
| N/A   29C    P0            115W /  700W |   62215MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A    812345      C   python3                                     62206MiB |
|    1   N/A  N/A    812345      C   python3                                     62206MiB |
+-----------------------------------------------------------------------------------------+
"""  # noqa: E501

# /proc/self/maps lines as Linux writes them (address, perms, offset, dev, inode, path).
MAPS = """\
7f2c40000000-7f2c40021000 rw-p 00000000 00:00 0
7f2c4a600000-7f2c4a6c2000 r--p 00000000 fd:01 1048712                    /opt/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.12
7f2c52000000-7f2c52092000 r--p 00000000 fd:01 1048713                    /opt/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12
7f2c53000000-7f2c53010000 r--p 00000000 fd:01 1048790                    /opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn_graph.so.9
7f2c54000000-7f2c54010000 r--p 00000000 fd:01 1048791                    /opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9
7f2c55000000-7f2c55010000 r--p 00000000 fd:01 1048800                    /opt/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12
7f2c56000000-7f2c56010000 r--p 00000000 fd:01 2097201                    /usr/lib/x86_64-linux-gnu/libcuda.so.570.133.20
7ffd1c9e0000-7ffd1ca01000 rw-p 00000000 00:00 0                          [stack]
"""  # noqa: E501


def test_version_codes_read_as_their_libraries_define_them():
    assert [stack.cuda_version(code) for code in (12040, 12090, 13000)] == ["12.4", "12.9", "13.0"]
    assert [stack.cudnn_version(code) for code in (91002, 8907)] == ["9.10.2", "8.9.7"]
    assert [stack.cublas_version(code) for code in (120901, 130100)] == ["12.9.1", "13.1.0"]
    assert [stack.nccl_version(code) for code in (22105, 2804)] == ["2.21.5", "2.8.4"]


@pytest.mark.skipif(Path("/dev/nvidiactl").exists(), reason="this machine has an NVIDIA driver")
def test_without_a_gpu_every_version_is_none_with_a_reason():
    found = stack.gpu_stack()
    assert {key: found[key] for key in stack.VERSION_KEYS} == dict.fromkeys(stack.VERSION_KEYS)
    assert found["sources"] == dict.fromkeys(stack.VERSION_KEYS)
    assert found["gpus"] == []
    assert set(found["missing"]) == {*stack.VERSION_KEYS, "gpus"}
    assert "no NVML: " in found["reason"]
    assert "no CUDA driver" in found["reason"] or "no JAX CUDA plugin" in found["reason"]
    assert found["libraries"]["cuda"] is None
    if found["built_against"] is not None:  # JAX's CUDA plugin is installed: what it was built against
        assert set(found["built_against"]) == {"cuda_runtime", "cudnn", "cublas"}


UUID = "GPU-8c4f4e1b-7e6d-4f5a-9b1e-2d3c4b5a6f70"


class FakeNvml:
    """pynvml's calls as they answer on a 2-GPU node (older pynvml returns bytes for names)."""

    shut = False

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shut = True

    def nvmlSystemGetDriverVersion(self) -> str:
        return "570.133.20"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 12080

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"NVIDIA H200"

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(total=150754820096, used=0, free=150754820096)

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        if handle == 1:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return UUID


def fake_versions(driver: int) -> SimpleNamespace:
    def refuse() -> int:
        raise RuntimeError("jaxlib/cuda/versions_helpers.cc:76: operation cublasGetVersion failed: internal error")

    return SimpleNamespace(
        cuda_driver_get_version=lambda: driver,
        cuda_runtime_get_version=lambda: 12090,
        cuda_runtime_build_version=lambda: 12090,
        cudnn_get_version=lambda: 91002,
        cudnn_build_version=lambda: 91002,
        cublas_get_version=refuse,
        cublas_build_version=lambda: 120901,
    )


def test_versions_come_from_nvml_and_jax_cuda_helpers_with_their_sources():
    nvml = FakeNvml()
    found = stack.read_stack(
        lambda: nvml, lambda: (fake_versions(12080), "jax_cuda12_plugin"), lambda: stack.loaded_libraries(MAPS)
    )
    assert nvml.shut
    assert {key: found[key] for key in stack.VERSION_KEYS} == {
        "nvidia_driver": "570.133.20",
        "cuda_driver_api": "12.8",
        "cuda_runtime": "12.9",
        "cudnn": "9.10.2",
        "nccl": None,
        "cublas": None,
    }
    assert found["sources"]["nvidia_driver"] == "pynvml nvmlSystemGetDriverVersion"
    assert found["sources"]["cudnn"] == (
        "jax_cuda12_plugin._versions.cudnn_get_version "
        "(/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9)"
    )
    assert found["gpus"] == [
        {"index": 0, "name": "NVIDIA H200", "memory_total_bytes": 150754820096, "uuid": UUID},
        {"index": 1, "name": "NVIDIA H200", "memory_total_bytes": 150754820096, "uuid": None},
    ]
    assert found["built_against"] == {"cuda_runtime": "12.9", "cudnn": "9.10.2", "cublas": "12.9.1"}
    assert set(found["missing"]) == {"nccl", "cublas"}
    assert "cublasGetVersion failed" in found["missing"]["cublas"]
    assert "libnccl not loaded" in found["missing"]["nccl"]
    assert found["reason"] == "; ".join(found["missing"].values())


def test_without_a_cuda_driver_library_versions_are_withheld():
    # The libraries still answer (they are on disk), but a rank without a driver ran none of them.
    found = stack.read_stack(
        lambda: FakeNvml(), lambda: (fake_versions(0), "jax_cuda12_plugin"), lambda: stack.loaded_libraries(MAPS)
    )
    assert found["nvidia_driver"] == "570.133.20"
    assert [found[key] for key in stack.LIBRARY_KEYS] == [None] * len(stack.LIBRARY_KEYS)
    assert found["missing"]["cudnn"] == "no CUDA driver: jax_cuda12_plugin._versions.cuda_driver_get_version gave 0"


def test_a_failing_reader_never_raises(monkeypatch):
    def broken() -> dict[str, str | None]:
        raise OSError("maps unreadable")

    monkeypatch.setattr(stack, "loaded_libraries", broken)
    found = stack.gpu_stack()
    assert found["nvidia_driver"] is None and "stack.gpu_stack failed: maps unreadable" in found["reason"]


def test_loaded_libraries_names_the_exact_library_not_its_siblings():
    assert stack.loaded_libraries(MAPS) == {
        "cuda": "/usr/lib/x86_64-linux-gnu/libcuda.so.570.133.20",
        "cudart": "/opt/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
        "cudnn": "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
        "cublas": "/opt/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12",
        "nccl": None,
        "nvml": None,
    }


def test_jax_environment_parses_what_the_installed_jax_prints(monkeypatch):
    import jax
    import jaxlib
    import numpy

    monkeypatch.setenv("JAX_OFFLOAD_REPRO_MARKER", "a=b c")
    found = stack.jax_environment()
    assert "parse_error" not in found, found.get("parse_error")
    assert (found["jax"], found["jaxlib"], found["numpy"]) == (
        jax.__version__,
        jaxlib.__version__,
        numpy.__version__,
    )
    assert found["python"] == sys.version.replace("\n", " ")
    uname = platform.uname()  # its repr, which jax prints, leaves out `processor`
    assert found["platform"] == {
        field: getattr(uname, field) for field in ("system", "node", "release", "version", "machine")
    }
    assert found["process_count"] == jax.process_count() == found["devices"]["process_count"]
    assert found["device_info"] == {
        "device_kind": jax.devices()[0].device_kind,
        "device_count": jax.device_count(),
        "local_device_count": jax.local_device_count(),
    }
    assert found["devices"]["platform"] == jax.devices()[0].platform
    assert found["env"]["JAX_OFFLOAD_REPRO_MARKER"] == "a=b c"
    assert found["text"] == jax.print_environment_info(return_string=True)


def test_a_gpu_node_environment_info_with_nvidia_smi_parses():
    found = stack.parse_environment_info(GPU_ENVIRONMENT_INFO)
    assert found["device_info"] == {"device_kind": "NVIDIA H100 80GB HBM3", "device_count": 16, "local_device_count": 8}
    assert found["process_count"] == 2
    assert found["platform"]["version"] == "#72-Ubuntu SMP Thu Oct  3 19:57:42 UTC 2024"
    assert found["platform"]["release"] == "5.15.0-1071-nvidia"
    assert found["env"] == {
        "XLA_FLAGS": "--xla_gpu_enable_latency_hiding_scheduler=true --xla_gpu_memory_limit_slop_factor=95",
        "JAX_COORDINATOR_ADDRESS": "gpu-node-017:3389",
    }
    assert found["nvidia_smi"] == {
        "driver_version": "550.127.05",
        "cuda_version": "12.4",
        "gpus": [
            {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559},
            {"index": 1, "name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559},
        ],
    }


def test_an_older_layout_is_refused_rather_than_half_read():
    # jax 0.4.33 printed the devices differently and had no 'device info:' line.
    older = GPU_ENVIRONMENT_INFO.replace(
        'device info: NVIDIA H100 80GB HBM3-16, 8 local devices"',
        "jax.devices (16 total, 8 local): [CudaDevice(id=0) CudaDevice(id=1) ... CudaDevice(id=7)]",
    )
    with pytest.raises(ValueError, match=r"unexpected line 'jax\.devices"):
        stack.parse_environment_info(older)
    with pytest.raises(ValueError, match="no 'jax:'"):
        stack.parse_environment_info("")
