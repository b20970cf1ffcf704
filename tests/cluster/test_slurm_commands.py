"""The submit (sbatch, rendered by the SLURM executor plugin itself) and launch (srun) lines of
every row on the full-scale GPU targets: nodes, GPUs, container, environment and flags."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from snakemake_executor_plugin_slurm.utils import set_gres_string

from conftest import REPO
from offload_repro.cluster import slurm
from offload_repro.core.data import load_rows, load_target
from offload_repro.produce.measured.runner import launch_command

# Distinct digests per container, so a family given the other family's image fails the test.
DIGESTS = {"jax-maxtext": "sha256:" + "ab" * 32, "jax-deepseek-v3-maxtext": "sha256:" + "cd" * 32}
FAMILY_IMAGE = {"llama": "jax-maxtext", "deepseek": "jax-deepseek-v3-maxtext"}


class Resources(dict):
    __getattr__ = dict.__getitem__


def sbatch_line(resources: dict) -> str:
    job = SimpleNamespace(resources=Resources(resources), threads=1)
    params = {
        "run_uuid": "run-row",
        "slurm_logfile": "/tmp/log",
        "comment_str": "rule_run_row",
        "account": "",
        "partition": "",
        "workdir": str(REPO),
    }
    return get_submit_command(job, params) + set_gres_string(job)


@pytest.fixture
def pinned(monkeypatch):
    """Digests as envs/resolve_containers.py would record them."""
    data = slurm.containers()
    entries = {name: {**entry, "digest": DIGESTS[name]} for name, entry in data["containers"].items()}
    monkeypatch.setattr(slurm, "containers", lambda: {**data, "containers": entries})


@pytest.mark.parametrize("target_name", ["gb200-nvl72", "vr-nvl144"])
def test_submit_line_asks_for_whole_nodes_and_their_gpus(target_name):
    """A job of several tasks is marked `mpi`: the plugin then wraps no srun around the runner, which
    runs once and starts the ranks with its own srun."""
    resources = slurm.job_resources(load_target(target_name))
    assert resources["mpi"] == "srun" and resources["tasks_per_node"] == 4
    line = sbatch_line(resources)
    for option in ("--nodes=32", "--gres=gpu:4", "--ntasks-per-node=4", "--ntasks-per-gpu=1", "--cpus-per-gpu=16"):
        assert option in line
    assert "--exclusive" in line and "-t 60" in line


@pytest.mark.parametrize("target_name", ["gb200-nvl72", "vr-nvl144"])
@pytest.mark.parametrize("runtime", ["pyxis", "apptainer"])
def test_launch_line_of_every_row(tables, target_name, runtime, pinned, tmp_path):
    target = load_target(target_name)
    limit = target.spec["cluster"]["environment"]["XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB"]
    rows = load_rows(tables)
    assert rows
    for row in rows:
        prefix, env, container = launch_command(row, target, tmp_path, "unused", runtime, allow_unpinned=False)
        line = " ".join(prefix)
        assert line.startswith("srun ") and prefix[-1] == "python3"
        assert "--nodes=32" in prefix and "--ntasks-per-node=4" in prefix and "--gpus-per-node=4" in prefix
        digest = DIGESTS[FAMILY_IMAGE[row.family]]
        registry = {"llama": "nvcr.io", "deepseek": "ghcr.io"}[row.family]
        image = "nvidia/jax@" + digest
        assert image in line and container["digest"] == digest and container["runtime"] == runtime
        assert container["name"] == FAMILY_IMAGE[row.family]
        if runtime == "pyxis":
            assert f"--container-image={registry}#{image}" in prefix
        else:
            assert prefix[prefix.index("apptainer") : prefix.index("apptainer") + 3] == ["apptainer", "exec", "--nv"]
            assert f"docker://{registry}/{image}" in prefix
        assert env["XLA_FLAGS"].split() == [*row.xla_flags, *row.unstated_xla_flags]
        assert env["XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB"] == limit
        assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.94"


def test_deepseek_runs_in_the_sources_deepseek_image(rows):
    assert slurm.container_for(rows["deepseek-remat"]).reference == "ghcr.io/nvidia/jax:deepseek_v3_maxtext"


def test_gpu_run_refuses_an_image_without_digest(tables, tmp_path):
    row = next(row for row in load_rows(tables) if row.family == "llama")
    with pytest.raises(slurm.ContainerError, match="field 'digest' is null"):
        launch_command(row, load_target("gb200-nvl72"), tmp_path, "python", "pyxis", allow_unpinned=False)


UNREACHABLE = "pinging container registry ghcr.io: dial tcp: no route to host"


@pytest.mark.parametrize(
    ("skopeo_body", "why"),
    [
        (f"echo '{UNREACHABLE}' >&2; exit 1", f"skopeo inspect failed: {UNREACHABLE}"),
        (None, "skopeo is not installed (it resolves tags to digests)"),  # no skopeo on PATH
    ],
)
def test_an_unpinned_image_whose_digest_is_unknown_runs_by_tag_and_records_why(
    rows, tmp_path, skopeo, monkeypatch, skopeo_body, why
):
    if skopeo_body is None:
        monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no skopeo, wherever this runs
    else:
        skopeo(skopeo_body)
    row, gb200 = rows["llama-baseline"], load_target("gb200-nvl72")
    _, _, container = launch_command(row, gb200, tmp_path, "python", "pyxis", allow_unpinned=True)
    assert container["digest"] is None and container["image"] == "nvcr.io#nvidia/jax:25.01-maxtext-py3"
    assert container["digest_at_run_time"] is None
    assert container["digest_error"] == f"nvcr.io/nvidia/jax:25.01-maxtext-py3: {why}"


def test_an_unpinned_image_runs_by_the_digest_its_tag_has_at_run_time(tables, tmp_path, skopeo):
    row = next(row for row in load_rows(tables) if row.family == "llama")
    digest = "sha256:" + "ab" * 32
    args = skopeo(f'echo \'{{"Digest": "{digest}"}}\'')
    prefix, _, container = launch_command(row, load_target("gb200-nvl72"), tmp_path, "py", "pyxis", allow_unpinned=True)
    assert args.read_text().splitlines() == ["inspect", "--no-tags", "docker://nvcr.io/nvidia/jax:25.01-maxtext-py3"]
    assert f"--container-image=nvcr.io#nvidia/jax@{digest}" in prefix
    assert container["digest"] is None and container["digest_at_run_time"] == digest
    assert container["digest_error"] is None


def test_cpu_slurm_rows_start_one_process_per_task(tables, tmp_path):
    target = load_target("cpu-slurm-2")
    prefix, env, container = launch_command(load_rows(tables)[0], target, tmp_path, "py", "pyxis", False)
    assert prefix[0] == "srun" and prefix[-1] == "py" and container is None
    assert "--ntasks-per-node=2" in prefix and "--kill-on-bad-exit=1" in prefix
    assert f"--output={tmp_path}/ranks/rank-%t.log" in prefix
    assert env["OFFLOAD_REPRO_RANKS_DIR"] == str(tmp_path / "ranks")
    line = sbatch_line(slurm.job_resources(target))
    assert "--ntasks-per-node=2" in line and "--cpus-per-task=1" in line and "--mem 8000" in line


def test_cpu_rows_run_locally_inside_their_job(tables, tmp_path):
    prefix, env, container = launch_command(load_rows(tables)[0], load_target("cpu"), tmp_path, "py", "pyxis", False)
    assert prefix == ["py"] and env == {} and container is None
    one_task = {"nodes": 1, "tasks": 1, "cpus_per_task": 2, "mem_mb": 6000, "runtime": 30}
    assert slurm.job_resources(load_target("cpu")) == one_task
