"""The target's shared XLA kernel cache: private copies per compile, merged back under a lock."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from offload_repro.produce import kernel_cache

# Two entries of a kernel file XLA wrote for a GB300 compile (tests/fixtures/README.md).
SAMPLE = Path(__file__).parent / "fixtures" / "xla-kernels.bin"


def test_reads_the_kernels_xla_wrote_and_writes_them_back_byte_for_byte():
    entries = kernel_cache.read_entries(SAMPLE)
    assert set(entries) == {"wrapped_iota", "wrapped_iota_1"}
    assert all(len(entry) > 5000 for entry in entries.values())  # each holds its compiled binary
    assert kernel_cache.serialize(entries) == SAMPLE.read_bytes()


def test_no_file_is_an_empty_cache_and_a_damaged_one_is_unreadable(tmp_path):
    assert kernel_cache.read_entries(tmp_path / "absent.bin") == {}
    damaged = tmp_path / "damaged.bin"
    damaged.write_bytes(SAMPLE.read_bytes()[:-100])
    assert kernel_cache.read_entries(damaged) is None


def test_a_compile_gets_a_private_copy_and_its_kernels_are_merged_back(tmp_path):
    entries = kernel_cache.read_entries(SAMPLE)
    shared = tmp_path / "programs" / "xla-kernels-x.bin"
    private = tmp_path / "work" / "xla-kernels.bin"
    private.parent.mkdir()

    flag = kernel_cache.checkout(shared, private)  # nothing shared yet
    assert flag == f"--xla_gpu_kernel_cache_file={private}" and not private.exists()
    private.write_bytes(kernel_cache.serialize({"wrapped_iota": entries["wrapped_iota"]}))
    assert kernel_cache.publish(private, shared) == 1
    assert not private.exists()

    kernel_cache.checkout(shared, private)
    assert private.read_bytes() == shared.read_bytes()
    # Meanwhile another compile publishes a kernel of its own: both are kept.
    other = tmp_path / "other.bin"
    other.write_bytes(kernel_cache.serialize({"wrapped_iota_1": entries["wrapped_iota_1"]}))
    assert kernel_cache.publish(other, shared) == 2
    assert kernel_cache.publish(private, shared) == 2
    assert kernel_cache.read_entries(shared) == entries


def test_concurrent_publishes_lose_no_kernel(tmp_path):
    entries = kernel_cache.read_entries(SAMPLE)
    shared = tmp_path / "xla-kernels-x.bin"
    privates = []
    for index in range(8):
        private = tmp_path / f"private-{index}.bin"
        private.write_bytes(kernel_cache.serialize({f"{name}-{index}": body for name, body in entries.items()}))
        privates.append(private)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda private: kernel_cache.publish(private, shared), privates))
    assert len(kernel_cache.read_entries(shared)) == 16


def test_an_unreadable_private_file_leaves_the_shared_one_alone(tmp_path):
    shared = tmp_path / "xla-kernels-x.bin"
    shutil.copyfile(SAMPLE, shared)
    private = tmp_path / "private.bin"
    private.write_bytes(b"\xff" * 64)
    assert kernel_cache.publish(private, shared) is None
    assert shared.read_bytes() == SAMPLE.read_bytes() and not private.exists()


def test_a_compile_that_wrote_no_kernel_file_changes_nothing(tmp_path):
    shared = tmp_path / "xla-kernels-x.bin"
    shutil.copyfile(SAMPLE, shared)
    before = shared.stat().st_mtime_ns
    assert kernel_cache.publish(tmp_path / "never-written.bin", shared) is None
    assert shared.stat().st_mtime_ns == before


def test_an_unreadable_shared_file_is_replaced(tmp_path):
    shared = tmp_path / "xla-kernels-x.bin"
    shared.write_bytes(b"\xff" * 64)
    private = tmp_path / "private.bin"
    shutil.copyfile(SAMPLE, private)
    assert kernel_cache.publish(private, shared) == 2


def test_kernels_are_offered_only_to_compiles_for_the_same_gpu_and_xla(tmp_path):
    versions = {"jax": "0.12.0.1", "jaxlib": "0.12.0.1"}
    path = kernel_cache.shared_path(tmp_path, "gpu_device_info { ... }", versions)
    assert path.parent == tmp_path and path.name.startswith("xla-kernels-")
    assert kernel_cache.shared_path(tmp_path, "gpu_device_info { ... }", dict(versions)) == path
    assert kernel_cache.shared_path(tmp_path, "another description", versions) != path
    assert kernel_cache.shared_path(tmp_path, "gpu_device_info { ... }", {**versions, "jaxlib": "0.13"}) != path
