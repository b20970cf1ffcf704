"""MaxText's model FLOPs per component (produce/compiled/model_flops.py) add up to MaxText's own
total, for one row of each model family as compiled for GB200 (the config is built, nothing is
compiled)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

ROWS = ("llama-baseline", "deepseek-offload-optimized")

# In a process of its own: MaxText's import and its config set global JAX state.
CONFIGS = textwrap.dedent(
    """
    import json, sys
    from maxtext.configs import pyconfig
    from maxtext.utils import maxtext_utils
    from offload_repro.core import maxtext_args
    from offload_repro.core.data import load_rows, load_target
    from offload_repro.core.maxtext_configs import base_config
    from offload_repro.produce.compiled import model_flops
    from offload_repro.produce.compiled.program_cache import compile_overrides

    rows = {row.id: row for row in load_rows(sys.argv[2:4])}
    found = {}
    for row_id in sys.argv[4:]:
        overrides = compile_overrides(rows[row_id], load_target("gb200-nvl72"))
        overrides["base_output_directory"] = sys.argv[1]
        config = pyconfig.initialize(["aot", str(base_config()), *maxtext_args.as_arguments(overrides)])
        parts = maxtext_utils.calculate_tflops_training_per_device(config, log=False)
        found[row_id] = dict(zip(("total", "weights", "attention"), parts), components=model_flops.components(config))
    print(json.dumps(found))
    """
)


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("model-flops")
    tables = [str(REPO / "experiments/rows/llama3.1-405b.yaml"), str(REPO / "experiments/rows/deepseek-v3-671b.yaml")]
    env = os.environ | {"JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO / "workflow")}
    command = [sys.executable, "-c", CONFIGS, str(work / "output"), *tables, *ROWS]
    done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("row", ROWS)
def test_the_components_add_up_to_maxtexts_own_total(split, row):
    found = split[row]
    components = found["components"]
    assert set(components) == {"ffn", "qkv", "output_projection", "attention", "embedding"}
    assert all(value > 0 for value in components.values())
    assert sum(components.values()) == pytest.approx(found["total"], rel=1e-12)
    assert components["attention"] == pytest.approx(found["attention"], rel=1e-12)
    assert sum(v for k, v in components.items() if k != "attention") == pytest.approx(found["weights"], rel=1e-12)


def test_the_split_is_the_models_shape(split):
    """By hand, in MaxText's units (forward x 3): Llama 3.1 405B's FFN is 3 matmuls of 16384 x 53248
    per token and layer; DeepSeek-V3's is its 3 dense layers and, in each of its 58 MoE layers, the
    gate over 256 experts, 1 shared and 8 routed experts of 3 matmuls of 7168 x 2048."""
    llama = split["llama-baseline"]["components"]
    tokens, width, layers = 2 * 8192, 16384, 126
    assert llama["ffn"] == pytest.approx(3 * 3 * 2 * tokens * width * 53248 * layers / 1e12)
    assert llama["embedding"] == pytest.approx(3 * 2 * tokens * width * 128256 / 1e12)
    deepseek = split["deepseek-offload-optimized"]["components"]
    tokens, width = 8 * 4096, 7168
    gate, expert, dense = 2 * tokens * width * 256, 3 * 2 * tokens * width * 2048, 3 * 2 * tokens * width * 18432
    assert deepseek["ffn"] == pytest.approx(3 * ((gate + 9 * expert) * 58 + dense * 3) / 1e12)
