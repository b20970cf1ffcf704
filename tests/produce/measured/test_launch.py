"""What the launcher records of the software a run used: JAX's environment report and the CUDA wheels."""

from __future__ import annotations

from types import SimpleNamespace

import jax

from offload_repro.produce.measured import launch


def test_environment_is_jaxs_own_report_and_a_mapping_of_versions():
    found = launch.environment()  # on the CPU backend here
    assert set(found) == {"environment_info", "cuda_packages"}
    assert f"jax:    {jax.__version__}" in found["environment_info"]
    packages = found["cuda_packages"]
    assert isinstance(packages, dict) and list(packages) == sorted(packages)
    assert all(isinstance(name, str) and isinstance(version, str) for name, version in packages.items())


def distribution(name: str | None, version: str) -> SimpleNamespace:
    return SimpleNamespace(metadata={} if name is None else {"Name": name}, version=version)


def test_cuda_packages_are_the_nvidia_and_jax_cuda_wheels_sorted_by_name():
    installed = [
        distribution("nvidia-nccl-cu12", "2.28.9"),
        distribution("jax", "0.12.0.1"),
        distribution("jax_cuda12_plugin", "0.12.0.1"),  # as some wheels spell their name
        distribution("jax-cuda12-pjrt", "0.12.0.1"),
        distribution("nvidia-cudnn-cu12", "9.19.0.56"),
        distribution("nvidia-nccl-cu12", "2.21.5"),  # a second copy later on sys.path: not the one imported
        distribution("nvidiafoo", "1.0"),
        distribution(None, "0"),  # a broken install with no name
    ]
    assert launch.cuda_packages(installed) == {
        "jax-cuda12-pjrt": "0.12.0.1",
        "jax_cuda12_plugin": "0.12.0.1",
        "nvidia-cudnn-cu12": "9.19.0.56",
        "nvidia-nccl-cu12": "2.28.9",
    }
