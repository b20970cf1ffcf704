"""XLA's kernels of a row's last compile, kept so that compiling it again reuses them."""

from __future__ import annotations

from pathlib import Path

from offload_repro.core.data import load_target
from offload_repro.core.files import write_json
from offload_repro.produce.compiled import kernel_cache, program_cache

# The kept file is opaque here: XLA reads and writes it, this module only copies it whole.
SAMPLE_BYTES = b"kernels XLA wrote"
VERSIONS = {"jax": "0.12.0.1", "jaxlib": "0.12.0.1"}


def test_kernels_are_kept_per_row_and_offered_only_to_the_same_gpu_xla_and_assembler(tmp_path):
    def kept(row="deepseek-remat", description="gpu_device_info { ... }", versions=VERSIONS, machine_code=False):
        return kernel_cache.kept_path(tmp_path, row, description, versions, machine_code)

    path = kept()
    assert path.parent == tmp_path / "kernels" and path.name.startswith("deepseek-remat.")
    assert kept(versions=dict(VERSIONS)) == path
    assert kept(row="llama-baseline") != path
    assert kept(description="another description") != path
    assert kept(versions={"jax": "0.13"}) != path
    assert kept(machine_code=True) != path  # real machine code never meets the stand-in's empty images


def test_a_compile_works_on_a_private_copy_that_replaces_the_kept_file_after(tmp_path):
    kept = kernel_cache.kept_path(tmp_path / "programs", "llama-baseline", "description", VERSIONS, False)
    private = tmp_path / "work" / "xla-kernels.bin"
    private.parent.mkdir()

    flag = kernel_cache.checkout(kept, private)  # nothing kept yet: XLA starts empty
    assert flag == f"--xla_gpu_kernel_cache_file={private}" and not private.exists()
    private.write_bytes(SAMPLE_BYTES)  # what XLA writes
    assert kernel_cache.publish(private, kept)
    assert kept.read_bytes() == SAMPLE_BYTES and not private.exists()

    kernel_cache.checkout(kept, private)  # the next compile of the row starts from them
    assert private.read_bytes() == SAMPLE_BYTES


def test_a_compile_that_wrote_no_kernel_file_leaves_the_kept_one(tmp_path):
    kept = tmp_path / "kernels" / "row.x.bin"
    kept.parent.mkdir()
    kept.write_bytes(SAMPLE_BYTES)
    assert not kernel_cache.publish(tmp_path / "never-written.bin", kept)
    assert kept.read_bytes() == SAMPLE_BYTES


def test_compiling_a_row_again_starts_from_its_kept_kernels_and_a_failed_compile_keeps_them(rows, tmp_path):
    """program_cache.compile_program with a stand-in for the compile process (what XLA would do with the
    file: read it, write it back with its kernels)."""
    gb200, row = load_target("gb200-nvl72"), rows["llama-baseline"]
    kept = tmp_path / "programs" / "kernels" / "llama-baseline.x.bin"
    seen = []

    def compile_process(succeeds: bool):
        def launch(command, env, cwd, log_file):
            flag = next(f for f in env["XLA_FLAGS"].split() if f.startswith(kernel_cache.FLAG))
            private = Path(flag.split("=", 1)[1])
            seen.append(private.read_bytes() if private.exists() else None)
            private.write_bytes(SAMPLE_BYTES + (b"" if succeeds else b"half"))
            log_file.write_text("")
            write_json(cwd / "aot.json", {"exception": None if succeeds else {"type": "E", "message": "m"}})
            return (0 if succeeds else 1), 1.0

        return launch

    for succeeds in (True, True, False):
        result = program_cache.compile_program(
            row, gb200, tmp_path / "work", "k", launcher=compile_process(succeeds), kernels=kept
        )
        assert (result["status"] == "ok") is succeeds
        assert kept.read_bytes() == SAMPLE_BYTES  # the failed compile's file is not kept
    assert seen == [None, SAMPLE_BYTES, SAMPLE_BYTES]
