"""Rows and targets load from the repository's YAML; malformed files name file, row and field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from offload_repro.core.data import DataError, load_rows, load_target, schema
from offload_repro.present.text import hardware_text

ROWS_FILE = REPO / "experiments" / "rows" / "llama3.1-405b.yaml"


def test_every_row_of_both_tables_is_data(rows):
    assert len(rows) == 9
    assert sum(row.table == "llama3.1-405b" for row in rows.values()) == 4
    assert sum(row.table == "deepseek-v3-671b" for row in rows.values()) == 5
    assert rows["deepseek-device-mb8"].published["outcome"] == "oom"
    assert rows["deepseek-device-mb2"].global_batch_size == 256
    assert rows["deepseek-offload-optimized"].published["tflops_per_device"] == 908.2
    # LHS off is written out as its flag; a row's placement and citation merge over the table's defaults
    assert "--xla_gpu_enable_latency_hiding_scheduler=false" in rows["llama-qkv-offload-nolhs"].xla_flags
    assert "--xla_gpu_enable_latency_hiding_scheduler=false" in rows["deepseek-offload-plain"].xla_flags
    assert rows["llama-qkv-offload-lhs"].tensors("offload") == ["query_proj", "key_proj", "value_proj"]
    assert rows["llama-qkv-offload-lhs"].citation["url"].startswith("https://developer.nvidia.com/")


def broken_copy(tmp_path: Path, mutate) -> Path:
    data = yaml.safe_load(ROWS_FILE.read_text())
    mutate(data)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: d["rows"][1]["placement"].update(query_proj="hbm"),
            ["row 2 (id 'llama-qkv-offload-lhs')", "placement.query_proj", "'hbm'"],
        ),
        (
            lambda d: d["rows"][0]["published"].pop("outcome"),
            ["row 1 (id 'llama-baseline')", "published", "'outcome' is a required property"],
        ),
        (lambda d: d["rows"][2].update(xla_flags=["xla_gpu_foo"]), ["row 3", "xla_flags.0"]),
        (lambda d: d["rows"][3].update(per_device_batch_size="two"), ["row 4", "per_device_batch_size"]),
        (lambda d: d["rows"][0].update(colour="red"), ["row 1", "'colour' was unexpected"]),
        (lambda d: d["defaults"].pop("model"), ["field 'defaults'", "'model' is a required property"]),
        (lambda d: d["rows"][1].update(id="llama-baseline"), ["row id 'llama-baseline': field 'id': already used"]),
    ],
)
def test_malformed_or_duplicate_rows_name_file_row_and_field(tmp_path, mutate, expected):
    path = broken_copy(tmp_path, mutate)
    with pytest.raises(DataError) as raised:
        load_rows([path])
    message = str(raised.value)
    assert str(path) in message
    for part in expected:
        assert part in message


def test_yaml_syntax_error_names_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("rows: [\n")
    with pytest.raises(DataError, match=r"bad\.yaml: not valid YAML"):
        load_rows([path])


def test_targets_load_and_unknown_target_lists_known_ones():
    assert load_target("cpu").scale["devices"] == 1
    with pytest.raises(DataError, match=r"no such target .*known: .*cpu"):
        load_target("gb999")


def target_copy(tmp_path: Path, name: str, edit) -> Path:
    """The target file `name` with `edit(text)` applied, in a directory of its own."""
    source = REPO / "experiments" / "targets" / f"{name}.yaml"
    (tmp_path / f"{name}.yaml").write_text(edit(source.read_text()))
    return tmp_path


def test_geometry_and_host_memory_are_stated_once_and_derived():
    gb200, rubin, hgx = (load_target(name) for name in ("gb200-nvl72", "vr-nvl144", "h200-8"))
    assert gb200.spec["hardware"]["devices"] == gb200.scale["devices"] == 128 == gb200.processes
    assert gb200.spec["compile"]["topology"] == "1x32x4" and gb200.spec["cluster"]["gpus_per_node"] == 4
    assert gb200.spec["hardware"]["host_memory_gb_per_gpu"] == 240  # 2 x 480 GB Grace per 4 GPUs
    assert rubin.spec["hardware"]["host_memory_gb_per_gpu"] == 750  # 2 x 1.5 TB Vera per 4 GPUs
    assert hgx.spec["compile"]["topology"] == "1x1x8" and hgx.spec["hardware"]["host_memory_gb_per_gpu"] == 256


def test_every_hardware_fact_of_a_target_is_cited_with_a_source_and_its_quote():
    """Each precision's peak, HBM, the links, NICs and host memory: a citation of each (a source and the
    sentence quoted as it stands, or a stated assumption), or the fact is named, by file and field."""
    rubin = load_target("vr-nvl144")
    citations = rubin.spec["hardware"]["citations"]
    assert set(citations) >= {"peak_dense_tflops.bfloat16", "hbm", "host_link", "network_link", "nics_per_gpu"}
    assert "assumed" in citations["peak_dense_tflops.bfloat16"]  # no BF16 figure is published for Rubin
    assert all("quote" in entry or "assumed" in entry for entry in citations.values())
    gb200 = load_target("gb200-nvl72")
    assert [line.split(": field ")[1].split(":")[0] for line in gb200.uncited] == [
        "'hardware.network_link'",
        "'hardware.nics_per_gpu'",
    ]


def test_a_fact_without_a_citation_is_named_by_file_and_field(tmp_path):
    def without_fp8(text: str) -> str:
        start = text.index("    peak_dense_tflops.fp8:")
        return text[:start] + text[text.index("    hbm:", start) :]

    h100 = load_target("h100-sxm", target_copy(tmp_path, "h100-sxm", without_fp8))
    assert len(h100.uncited) == 1
    assert re.search(r"h100-sxm.yaml: field 'hardware.peak_dense_tflops.fp8': no citation", h100.uncited[0])
    assert "stated without a citation: peak_dense_tflops.fp8" in hardware_text(h100.spec["hardware"])


def test_a_peak_is_per_gpu_on_a_gpu_and_per_chip_on_a_tpu():
    assert "peak dense bfloat16 989 TFLOPs/s per GPU" in hardware_text(load_target("h100-sxm").spec["hardware"])
    assert "peak dense bfloat16 197 TFLOPs/s per chip" in hardware_text(load_target("tpu-v5e-1").spec["hardware"])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # a fact that follows from the hardware's geometry or host memory, stated again differently
        (
            lambda text: text.replace("  nodes: 32\n", "  nodes: 32\n  devices: 120\n"),
            "field 'hardware.devices': .* contradicts",
        ),
        (
            lambda text: text.replace("compile:\n", "compile:\n  topology: 1x16x8\n"),
            "field 'compile.topology': .* contradicts",
        ),
        (lambda text: text.replace("cluster:\n", "cluster:\n  nodes: 16\n"), "field 'cluster.nodes': .* contradicts"),
        (
            lambda text: text.replace("  host_memory: {", "  host_memory_gb_per_gpu: 375\n  host_memory: {"),
            "field 'hardware.host_memory_gb_per_gpu': .* contradicts",
        ),
        (  # a link's measured share must run low to high
            lambda text: text.replace(
                "hbm: {low: 0.84, central: 0.90, high: 0.93", "hbm: {low: 0.93, central: 0.90, high: 0.84", 1
            ),
            r"field 'hardware.link_efficiency.hbm': low 0.93",
        ),
        (  # XLA_PYTHON_CLIENT_MEM_FRACTION is the memory a compile plans within (core/gpu.py): a share in (0, 1]
            lambda text: text.replace('MEM_FRACTION: "0.94"', 'MEM_FRACTION: "94%"', 1),
            r".*cluster.*environment.*XLA_PYTHON_CLIENT_MEM_FRACTION",
        ),
        (  # a citation in words, no source and quote
            lambda text: text.replace('      quote: "NVLink-C2C with 900 GB/s of bidirectional bandwidth"\n', "", 1),
            r"field 'hardware.citations.host_link'",
        ),
        (  # a citation of a fact the file does not state
            lambda text: text.replace("  citations:\n", "  citations:\n    collective_lnk: {assumed: typo}\n", 1),
            r"field 'hardware.citations.collective_lnk': cites a fact the file does not state",
        ),
        (  # HBM quoted from XLA's description as it does not stand there
            lambda text: text.replace("memory_bandwidth: 7928064000000", "memory_bandwidth: 8000000000000", 1),
            r"field 'hardware.citations.hbm': 'memory_bandwidth: 8000000000000' is not in",
        ),
    ],
)
def test_a_malformed_or_self_contradicting_target_is_refused_by_file_and_field(tmp_path, edit, message):
    with pytest.raises(DataError, match=rf"gb200-nvl72.yaml: {message}"):
        load_target("gb200-nvl72", target_copy(tmp_path, "gb200-nvl72", edit))


HOST_LINK_CITATION = """    host_link:
      source: https://developer.nvidia.com/blog/reducing-high-bandwidth-memory-bottlenecks-in-jax-based-llm-training-with-host-offloading/
      quote: "NVLink-C2C with 900 GB/s of bidirectional bandwidth"
"""


def test_a_citation_written_as_a_string_is_told_the_keys_a_citation_takes(tmp_path):
    def in_words(text: str) -> str:
        assert HOST_LINK_CITATION in text
        return text.replace(HOST_LINK_CITATION, "    host_link: NVLink-C2C, 900 GB/s\n", 1)

    with pytest.raises(DataError) as raised:
        load_target("gb200-nvl72", target_copy(tmp_path, "gb200-nvl72", in_words))
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'gb200-nvl72.yaml'}: field 'hardware.citations.host_link': ")
    # each way the schema takes a citation, and each of its keys with what it holds
    ways = "source and quote (reading optional), or assumed (source, quote, reading optional)"
    assert f"'NVLink-C2C, 900 GB/s' is a string; write an object with the keys {ways}. " in message
    for key, spec in schema("target")["$defs"]["fact_citation"]["properties"].items():
        assert f"{key}: {spec['description']}" in message


def test_a_citation_of_a_fact_not_stated_lists_every_fact_that_can_be_cited(tmp_path):
    def citing(key: str):
        """The file with that one citation in place of its own."""

        def edit(text: str) -> str:
            data = yaml.safe_load(text)
            data["hardware"]["citations"] = {key: {"assumed": "why"}}
            return yaml.safe_dump(data)

        return target_copy(tmp_path, "gb200-nvl72", edit)

    with pytest.raises(
        DataError, match=r"field 'hardware.citations.accelerator': cites a fact the file does not state"
    ) as raised:
        load_target("gb200-nvl72", citing("accelerator"))
    listed = str(raised.value).split("the facts it can cite: ")[1].split(", ")
    assert listed == sorted(listed) and "topology" in listed and "accelerator" not in listed
    assert {"hbm", "host_link", "peak_dense_tflops.bfloat16", "nvlink_domain_nodes"} <= set(listed)
    # the list is what the check takes: each fact listed is taken, each other key of the hardware refused
    for key in listed:
        assert load_target("gb200-nvl72", citing(key)).name == "gb200-nvl72"
    hardware = yaml.safe_load((REPO / "experiments" / "targets" / "gb200-nvl72.yaml").read_text())["hardware"]
    for key in set(hardware) - set(listed):
        with pytest.raises(DataError, match=rf"'hardware.citations.{key}': cites a fact the file does not state"):
            load_target("gb200-nvl72", citing(key))
