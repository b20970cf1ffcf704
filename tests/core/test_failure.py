"""A failure's cause, read from real failure logs of MaxText and XLA (tests/fixtures/failures/,
each captured as its README says), as the runner, the compile and the page record it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from markupsafe import escape

from conftest import FIXTURES
from offload_repro.cli import main
from offload_repro.cluster import preflight_checks
from offload_repro.core import failure
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.published import load_speed
from offload_repro.core.results import ResultError, write_result
from offload_repro.produce.compiled.compiled_row import compile_result
from offload_repro.produce.measured import runner
from offload_repro.produce.predicted.prediction import predict_target
from report_page import build_report

FAILURES = FIXTURES / "failures"
UNKNOWN_FLAG = "Unknown flag in XLA_FLAGS: --xla_gpu_enable_latency_hiding_schedular=true"
BAD_VALUE = (
    "Couldn't interpret value maybe for flag xla_gpu_enable_latency_hiding_scheduler.\n"
    "Check failed: tsl::Flags::Parse(&env_argv->argc, env_argv->argv.data(), flag_list) Flag parsing failed."
)
ASSERTION = "AssertionError: Number of devices per slice 1 does not match the product of the ICI parallelism 2"
OUT_OF_MEMORY = "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 1611356696 bytes."
FATAL_LINE = "fatal log line (parse_flags_from_env.cc:234)"


def log(name: str) -> str:
    return (FAILURES / name).read_text(encoding="utf-8")


def exception(name: str) -> dict:
    return json.loads((FAILURES / f"{name}.launch.json").read_text())["exception"]


@pytest.mark.parametrize(
    ("name", "recorded", "cause", "found_in"),
    [
        ("unknown-flag.train.log", None, UNKNOWN_FLAG, FATAL_LINE),
        ("unknown-flag.compile.log", None, UNKNOWN_FLAG, FATAL_LINE),
        # the usage text and every flag's help follow the fatal line; its thread's E line comes before
        ("bad-value.train.log", None, BAD_VALUE, "fatal log line (parse_flags_from_env.cc:220)"),
        ("exception.train.log", None, ASSERTION, "Python traceback"),
        ("exception.train.log", "exception", ASSERTION, "exception record"),  # its own record comes first
        ("out-of-memory.train.log", None, OUT_OF_MEMORY, "Python traceback"),  # without JAX's note on frames
    ],
    ids=["unknown-flag-train", "unknown-flag-compile", "bad-value", "traceback", "exception-record", "out-of-memory"],
)
def test_a_failure_is_the_processs_last_fatal_words(name, recorded, cause, found_in):
    found = failure.failure_of(1, log(name), name, exception(recorded) if recorded else None)
    assert (found.cause, found.found_in) == (cause, found_in)
    assert (found.exit_status, found.signal, found.log) == (1, None, name)


def test_a_process_that_said_nothing_is_named_by_its_signal_or_status():
    silent = log("killed-rank/rank-1.log")
    assert silent == ""
    killed = failure.failure_of(-9, silent, "rank-1.log")
    assert (killed.cause, killed.found_in, killed.signal) == ("killed by SIGKILL", "signal", "SIGKILL")
    exited = failure.failure_of(3, "I1201 12:00:00.000000 1 x.py:1] nothing fatal\n", None)
    assert (exited.cause, exited.found_in) == ("exited with status 3; its log holds no error", "exit status")


def test_a_cause_is_cut_to_a_readable_length_and_says_so():
    long = failure.failure_of(1, "Traceback (most recent call last):\nValueError: " + "x" * 2000, None)
    assert len(long.cause) == failure.CAUSE_CHARS and long.cause.endswith(failure.CUT)
    assert long.cause.startswith("ValueError: xxx")


def test_the_steps_a_silent_exit_completed_are_its_cause():
    found = runner.run_failure(0, None, "", "train.log", steps_done=4, steps=10)
    assert (found.cause, found.found_in) == ("training stopped after 4 of 10 steps", "metrics file")


def test_srun_says_how_each_task_ended():
    assert failure.srun_endings(log("killed-rank/train.log")) == {1: ("vm", -9), 0: ("vm", -9)}
    text = "srun: error: n1: tasks 0-2,5: Exited with exit code 1\nsrun: error: n2: task 3: Aborted\n"
    assert failure.srun_endings(text) == {0: ("n1", 1), 1: ("n1", 1), 2: ("n1", 1), 5: ("n1", 1), 3: ("n2", -6)}


def ranks_in(tmp_path: Path, case: str) -> list[dict]:
    """The rank records of a captured run, their logs where the runner reads them (in the checkout)."""
    copied = Path(shutil.copytree(FAILURES / case, tmp_path / case))
    ranks = []
    for task in (0, 1):
        record = json.loads((copied / f"rank-{task}.json").read_text())
        ranks.append(record | {"log": str(copied / f"rank-{task}.log")})
    return ranks


def test_each_killed_rank_is_named_with_its_cause(tmp_path):
    ranks = ranks_in(tmp_path, "killed-rank")
    record, message = runner.row_failure(-9, None, log("killed-rank/train.log"), tmp_path / "train.log", ranks, 0, 10)
    assert message == "ranks 1, 0 on vm: killed by SIGKILL"
    assert record["cause"] == "rank 1 on vm: killed by SIGKILL" and record["signal"] == "SIGKILL"
    assert [(r["task"], r["cause"], r["exit_status"]) for r in record["ranks"]] == [
        (1, "killed by SIGKILL", -9),
        (0, "killed by SIGKILL", -9),
    ]
    assert record["log"] == ranks[1]["log"]


def test_ranks_that_failed_with_their_own_words_keep_them(tmp_path):
    ranks = ranks_in(tmp_path, "killed-rank")
    (Path(ranks[0]["log"])).write_text(log("unknown-flag.train.log"))
    srun_log = "srun: error: vm: task 0: Exited with exit code 1\nsrun: error: vm: task 1: Killed\n"
    record, message = runner.row_failure(1, None, srun_log, tmp_path / "train.log", ranks, 0, 10)
    assert message == f"rank 0 on vm: {UNKNOWN_FLAG}; rank 1 on vm: killed by SIGKILL"
    assert record["cause"] == f"rank 0 on vm: {UNKNOWN_FLAG}" and record["exit_status"] == 1


def test_ranks_that_never_joined_are_named_by_their_own_fatal_lines(tmp_path):
    copied = Path(shutil.copytree(FAILURES / "ranks-unknown-flag", tmp_path / "ranks"))
    ranks = [{"task": task, "state": "never joined", "log": str(copied / f"rank-{task}.log")} for task in (0, 1)]
    srun_log = log("ranks-unknown-flag/train.log")
    record, message = runner.row_failure(1, None, srun_log, tmp_path / "train.log", ranks, 0, 10)
    assert message == f"ranks 0, 1 on vm: {UNKNOWN_FLAG}"
    assert [(rank["task"], rank["host"], rank["cause"], rank["exit_status"]) for rank in record["ranks"]] == [
        (0, "vm", UNKNOWN_FLAG, 1),
        (1, "vm", UNKNOWN_FLAG, 1),
    ]


def test_a_preflight_step_that_failed_says_why_and_keeps_its_output(tmp_path, monkeypatch):
    output = log("preflight-unknown-flag/distributed.log")  # what srun printed, captured

    def srun(command, **_options):
        return subprocess.CompletedProcess(command, 1, stdout="", stderr=output)

    monkeypatch.setattr(preflight_checks.subprocess, "run", srun)
    with pytest.raises(preflight_checks.StepFailed) as failed:
        preflight_checks.srun(
            ["--ntasks=2"], ["python"], ["-m", preflight_checks.PROBE, "distributed"], {}, tmp_path / "step.log"
        )
    assert str(failed.value).startswith("`srun ")
    assert f"failed (exit status 1): {UNKNOWN_FLAG}; its output: {tmp_path / 'step.log'}" in str(failed.value)
    assert failed.value.failure.found_in == FATAL_LINE
    assert (tmp_path / "step.log").read_text() == output


def test_the_failure_is_typed_in_the_result_schema(tmp_path):
    run = json.loads((FIXTURES / "results/cpu/runs/llama-qkv-offload-lhs.json").read_text())
    found = failure.failure_of(1, log("unknown-flag.train.log"), "results/cpu/work/llama-baseline/train.log")
    failed = {k: v for k, v in run.items() if k not in ("kind", "schema_version")} | {
        "status": "error",
        "message": found.cause,
        "failure": found.record(),
    }
    assert write_result(tmp_path / "run.json", "run", failed)["failure"]["cause"] == UNKNOWN_FLAG
    with pytest.raises(ResultError, match="'failure' is a required property"):
        write_result(tmp_path / "run.json", "run", {k: v for k, v in failed.items() if k != "failure"})
    with pytest.raises(ResultError, match=r"field 'failure.exit_status'"):
        write_result(tmp_path / "run.json", "run", failed | {"failure": found.record() | {"exit_status": "one"}})


# Each captured failure as the runner records it: (exit status, srun's or the process's log, its
# launch record, its ranks) -> (status, the message the page shows, the note under it)
CASES = {
    "unknown-flag": (1, "unknown-flag.train.log", None, None),
    "bad-value": (1, "bad-value.train.log", None, None),
    "exception": (1, "exception.train.log", "exception", None),
    "out-of-memory": (1, "out-of-memory.train.log", "out-of-memory", None),
    "killed-rank": (-9, "killed-rank/train.log", None, "killed-rank"),
}
SHOWN = {
    "unknown-flag": ("error", UNKNOWN_FLAG, f"{FATAL_LINE}, exit status 1"),
    "bad-value": ("error", BAD_VALUE, "fatal log line (parse_flags_from_env.cc:220), exit status 1"),
    "exception": ("error", ASSERTION, "exception record, exit status 1"),
    "out-of-memory": (
        "oom",
        "JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 1611356696 bytes.",
        "exception record, exit status 1",
    ),
    "killed-rank": ("error", "ranks 1, 0 on vm: killed by SIGKILL", "SIGKILL"),
}


def failed_results(tmp_path: Path, tables: list[str], case: str) -> list[Path]:
    """The Llama QKV offload row's real run result as the captured failure leaves it, and (for
    the unknown flag) its compile too; the other fixtures as they were."""
    results = FIXTURES / "results"
    returncode, srun_log, launched, ranked = CASES[case]
    recorded = exception(launched) if launched else None
    ranks = ranks_in(tmp_path, ranked) if ranked else []
    status = runner.classify(returncode, recorded, log(srun_log), 0, 10)
    cause, message = runner.row_failure(returncode, recorded, log(srun_log), tmp_path / "train.log", ranks, 0, 10)
    run = json.loads((results / "cpu/runs/llama-qkv-offload-lhs.json").read_text())
    run |= {"status": status, "message": message, "failure": cause, "losses": []}
    run = {key: value for key, value in run.items() if key not in ("step_time_s", "tflops_per_device")}
    (tmp_path / "run.json").write_text(json.dumps(run))
    compiled = results / "compiled/gb200-nvl72/llama-qkv-offload-lhs.json"
    if case == "unknown-flag":
        row = next(row for row in load_rows(tables) if row.id == "llama-qkv-offload-lhs")
        found = failure.failure_of(1, log("unknown-flag.compile.log"), "compiled/work/compile.log")
        program = {"key": "0" * 16, "compiled_as": row.id, "status": "error", "message": found.cause}
        provenance = json.loads(compiled.read_text())["provenance"]
        program |= {"failure": found.record(), "stats": None, "provenance": provenance}
        result = compile_result(row, load_target("gb200-nvl72"), program, None, False)
        compiled = tmp_path / "compiled.json"
        compiled.write_text(json.dumps({"kind": "compile", "schema_version": 1, **result}))
    others = [results / "cpu/runs/deepseek-device-mb8.json", results / "analytic.json"]
    others += [results / f"compiled/gb200-nvl72/deepseek-{name}.json" for name in ("device-mb8", "offload-plain")]
    return [tmp_path / "run.json", compiled, *others]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_page_and_the_closing_lines_show_each_failures_cause(tmp_path, tables, capsys, case):
    evidence, verdicts, page = build_report(tmp_path, tables, failed_results(tmp_path, tables, case))
    capsys.readouterr()
    assert main(["summary", "--verdicts", str(verdicts), "--page", "p.html", "--evidence", str(evidence)]) == 0
    html, lines = page.read_text(), capsys.readouterr().out.splitlines()
    status, message, note = SHOWN[case]
    row = re.search(r'<tr id="row-llama-qkv-offload-lhs">(.*?)</tr>', html, re.S).group(1)
    measured = re.search(r'<span class="status s-(\w+)">\w+</span><br><span class="reason">(.*?)</span>', row, re.S)
    assert measured.groups() == (status, escape(message))
    assert f'<span class="small">{escape(note)}; log ' in row
    one_line = " ".join(message.split())  # the console's line of it
    assert lines[0].startswith("offload-repro: cpu: ") and lines[2:] == ["offload-repro: report: p.html"]
    assert lines[1].startswith(f"offload-repro: {status}: llama-qkv-offload-lhs (measured on cpu")
    assert lines[1].endswith(f"): {one_line}")
    if case == "unknown-flag":  # its compile failed too: the cause of each claim left without evidence
        assert row.count(f'<span class="reason">{UNKNOWN_FLAG}</span>') == 2  # measured and compiled
        claim = re.search(r'<tr id="claim-llama-qkv-host-gib"[^>]*>(.*?)</tr>', html, re.S).group(1)
        assert f"llama-qkv-offload-lhs: {UNKNOWN_FLAG}" in claim
        assert "(measured on cpu, compiled for gb200-nvl72): " in lines[1]


def test_a_row_whose_compile_failed_is_predicted_as_an_error_with_its_cause(tables):
    found = failure.failure_of(1, log("unknown-flag.compile.log"), "compile.log")
    compiled = {"row": "llama-baseline", "status": "error", "message": found.cause, "failure": found.record()}
    predicted = predict_target(load_rows(tables), load_target("gb200-nvl72"), [compiled], load_speed(), None, None)
    (row,) = predicted["rows"]
    assert (row["status"], row["message"]) == ("error", f"no compiled program: {UNKNOWN_FLAG}")
    assert row["failure"] == found.record()
