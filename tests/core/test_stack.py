"""The stack a rank records: JAX's environment read on this machine, and the GPU version readers with
NVML, JAX's CUDA helpers and an nvidia-smi executable standing in where no GPU is present."""

from __future__ import annotations

import os
import platform
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from offload_repro.core import stack

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
def test_without_a_gpu_every_version_is_none_with_a_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi, whatever this machine has installed
    found = stack.gpu_stack()
    assert {key: found[key] for key in stack.VERSION_KEYS} == dict.fromkeys(stack.VERSION_KEYS)
    assert found["sources"] == dict.fromkeys((*stack.VERSION_KEYS, "gpus"))
    assert found["gpus"] == []
    assert set(found["missing"]) == {*stack.VERSION_KEYS, "gpus"}
    assert "no NVML: " in found["reason"]
    assert found["missing"]["gpus"].endswith("; nvidia-smi: not on PATH")
    assert found["libraries"]["cuda"] is None
    try:
        stack._import_cuda_versions()
    except ImportError:  # no JAX CUDA plugin installed here: nothing says what CUDA it was built against
        assert "no JAX CUDA plugin" in found["reason"] and "no CUDA driver" not in found["reason"]
        assert found["built_against"] is None
    else:  # the plugin is installed, the driver is not: what the plugin was built against is still read
        assert "no CUDA driver" in found["reason"] and "no JAX CUDA plugin" not in found["reason"]
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


def read(import_nvml, driver: int = 12080, query_gpus=stack.query_nvidia_smi) -> dict:
    """read_stack over a node whose JAX CUDA plugin gives `driver` and whose libraries MAPS lists."""
    versions = fake_versions(driver)
    return stack.read_stack(
        import_nvml, lambda: (versions, "jax_cuda12_plugin"), lambda: stack.loaded_libraries(MAPS), query_gpus
    )


def test_versions_come_from_nvml_and_jax_cuda_helpers_with_their_sources():
    nvml = FakeNvml()
    asked: list[str] = []
    found = read(lambda: nvml, query_gpus=lambda: asked.append("nvidia-smi") or "")
    assert nvml.shut
    assert asked == []  # NVML answered: nvidia-smi is not asked the same again
    assert {key: found[key] for key in stack.VERSION_KEYS} == {
        "nvidia_driver": "570.133.20",
        "cuda_driver_api": "12.8",
        "cuda_runtime": "12.9",
        "cudnn": "9.10.2",
        "nccl": None,
        "cublas": None,
    }
    assert found["sources"]["nvidia_driver"] == "pynvml nvmlSystemGetDriverVersion"
    assert found["sources"]["gpus"].startswith("pynvml ")
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
    found = read(FakeNvml, driver=0)
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


def no_nvml() -> None:
    raise ModuleNotFoundError("No module named 'pynvml'")


H200_UUIDS = ("GPU-8c4f4e1b-7e6d-4f5a-9b1e-2d3c4b5a6f70", "GPU-1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f")
# nvidia-smi 570's answer to the query, as --format=csv,noheader,nounits writes it
H200_CSV = "".join(f"{index}, NVIDIA H200, 143771, {uuid}, 570.133.20\n" for index, uuid in enumerate(H200_UUIDS))


def stand_in_nvidia_smi(folder: Path, answer: str, status: int = 0) -> None:
    """An nvidia-smi that answers only the query the stack asks, as the real one would."""
    query = f"--query-gpu={','.join(stack.NVIDIA_SMI_FIELDS)} --format=csv,noheader,nounits"
    script = folder / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f'[ "$*" = "{query}" ] || {{ echo "unexpected arguments: $*" >&2; exit 2; }}\n'
        f"{shutil.which('cat')} <<'ANSWER'\n{answer}ANSWER\n"  # by path: PATH holds only the stand-in
        f"exit {status}\n"
    )
    script.chmod(0o755)


def test_without_nvml_the_driver_and_gpus_come_from_nvidia_smi(tmp_path, monkeypatch):
    stand_in_nvidia_smi(tmp_path, H200_CSV)
    monkeypatch.setenv("PATH", str(tmp_path))
    found = read(no_nvml)
    assert found["nvidia_driver"] == "570.133.20"
    assert found["gpus"] == [
        {"index": index, "name": "NVIDIA H200", "memory_total_bytes": 143771 * 2**20, "uuid": uuid}
        for index, uuid in enumerate(H200_UUIDS)
    ]
    query = "nvidia-smi --query-gpu=index,name,memory.total,uuid,driver_version"
    assert found["sources"]["nvidia_driver"] == query
    assert found["sources"]["gpus"] == query + " (memory in whole MiB)"
    assert found["cuda_driver_api"] == "12.8"  # not in nvidia-smi's query: JAX's CUDA helpers give it
    assert set(found["missing"]) == {"nccl", "cublas"}


def test_without_nvml_or_nvidia_smi_the_gpus_are_missing_with_both_reasons(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    found = read(no_nvml)
    assert (found["nvidia_driver"], found["gpus"]) == (None, [])
    both = "no NVML: No module named 'pynvml'; nvidia-smi: not on PATH"
    assert found["missing"]["nvidia_driver"] == found["missing"]["gpus"] == both
    assert found["reason"].count("no NVML") == 1  # one cause, said once


def test_a_failing_nvidia_smi_gives_its_own_words(tmp_path, monkeypatch):
    message = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    stand_in_nvidia_smi(tmp_path, message, status=9)
    monkeypatch.setenv("PATH", str(tmp_path))
    found = read(no_nvml)
    assert found["nvidia_driver"] is None
    assert found["missing"]["gpus"].endswith("nvidia-smi: exit 9: " + message.strip())


def test_nvidia_smi_answers_that_do_not_fit_the_query_are_refused():
    assert stack.parse_gpu_csv("0, NVIDIA GB10, [N/A], GPU-0, 580.95.05\n")[0][0]["memory_total_bytes"] is None
    with pytest.raises(ValueError, match="4 fields where 5"):
        stack.parse_gpu_csv("0, NVIDIA H200, 143771, 570.133.20\n")
    with pytest.raises(ValueError, match="driver versions"):
        stack.parse_gpu_csv(H200_CSV.replace("570.133.20", "550.127.05", 1))
    with pytest.raises(ValueError, match="no GPU listed"):
        stack.parse_gpu_csv("\n")


def test_jax_environment_reads_the_installed_jax(monkeypatch):
    import jax
    import jaxlib.version
    import numpy

    monkeypatch.setenv("JAX_OFFLOAD_REPRO_MARKER", "a=b c\nsecond line")
    monkeypatch.setenv("NOT_JAX_OFFLOAD_REPRO", "1")
    found = stack.jax_environment()
    assert set(found) == {"jax", "jaxlib", "numpy", "python", "platform", "env", "devices"}
    assert (found["jax"], found["jaxlib"], found["numpy"]) == (
        jax.__version__,
        jaxlib.version.__version__,
        numpy.__version__,
    )
    assert found["jaxlib"] == jax.lib.__version__  # the jaxlib that JAX itself loaded
    assert found["python"] == sys.version
    assert found["platform"] == platform.uname()._asdict()
    assert found["env"]["JAX_OFFLOAD_REPRO_MARKER"] == "a=b c\nsecond line"
    assert found["env"] == {name: value for name, value in os.environ.items() if name.startswith(("JAX_", "XLA_"))}
    devices = jax.devices()
    assert found["devices"] == {
        "platform": devices[0].platform,
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "local_device_count": len(jax.local_devices()),
        "process_count": jax.process_count(),
    }


def test_jax_variables_are_the_jax_and_xla_settings_by_name():
    environ = {"XLA_FLAGS": "--xla_dump_to=/tmp", "PATH": "/bin", "JAX_PLATFORMS": "cpu", "MY_JAX_X": "1"}
    assert list(stack.jax_variables(environ).items()) == [
        ("JAX_PLATFORMS", "cpu"),
        ("XLA_FLAGS", "--xla_dump_to=/tmp"),
    ]
