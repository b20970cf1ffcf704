"""Performance numbers of the main job on this machine (numbers to report, not a test).

    .venv/bin/python workflow/scripts/benchmark.py [--against COMMIT] [--config KEY=VALUE ...] [--repeats N]
        [--skip-main-job] [--whatif] [--tiers quick [slow]] [--ci] [--record]

For this checkout, and for COMMIT side by side (a clean `git worktree` of it, same .venv), it
measures, alternating the two so that a busy machine slows both alike (`--config` passes settings
to this checkout's runs only: `--against HEAD --config KEY=VALUE` prices one setting):

- the cold main job (`snakemake --cores all` on a fresh copy): wall time, how many jobs ran at
  once, per stage (first job start to last job end of each rule, from Snakemake's log) and per job;
- the dry run on the fresh copy (`snakemake -n`, median of 3) and the no-op rerun after the job
  (`snakemake --cores all` with nothing to do, median of 3);
- with --tiers, each tree's test tiers as its own envs/test.sh runs them: the quick tier
  (`envs/test.sh --quick`) and the slow tier (the slow, SLURM and browser tests, with the tree's
  own pytest-xdist arguments), wall time and whether they passed;
- a bare MaxText run of llama-baseline's CPU arguments (median of 3) after each tree's turn, and
  every figure as a ratio to the bare runs' median, so that a slower machine does not read as a
  regression (or a faster one hide it);
- whether both trees produced the same verdicts and the same compiled memory for every row;
- with --ci, `envs/bootstrap.sh` and then `.ci/run` on a clean clone of this checkout's HEAD;
- with --record, this tree's figures (the main job, the quick tier, bootstrap and CI, each with
  the bare run beside it, the commit and the day) merged into envs/timings.yaml, which
  `python -m offload_repro.plan --write` renders into the README;
- with --whatif, after each main job: the cold what-if stage (`--config whatif=True`: the grid
  of rows x GPU targets, the capacity frontiers, the transfer budget), per stage and job, its
  no-op rerun (median of 3), how many programs were compiled, and whether both trees found the
  same largest micro batch per policy and target and the same memory for every compiled row.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SNAKEMAKE = [PYTHON, "-m", "snakemake"]
sys.path.insert(0, str(REPO / "workflow"))
from offload_repro.core.checkout_copy import copy_workflow  # noqa: E402

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]$")
JOB = re.compile(r"^(?:local)?rule (\w+):$")


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall seconds and output of `command` in `cwd`, by default with a home of the tree's own, so
    that no cache under the user's home (an older tree's MaxText kept JAX's in ~/jax_cache) makes
    a cold run warm."""
    if env is None:
        (cwd / ".home").mkdir(exist_ok=True)
        env = {**os.environ, "HOME": str(cwd / ".home")}
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {cwd}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return time.monotonic() - started, done.stdout + done.stderr


def median_s(command: list[str], cwd: Path, times: int = 3, env: dict[str, str] | None = None) -> float:
    """The median wall seconds of `command` run `times` times in `cwd` (`env`: as `timed` takes it)."""
    return statistics.median(timed(command, cwd, env)[0] for _ in range(times))


def checkout_of(commit: str | None, scratch: Path) -> Path:
    """This checkout (commit None) or a clean worktree of the commit, made once, with this
    checkout's .venv (the tiers run `.venv/bin/python` of the checkout)."""
    if commit is None:
        return REPO
    checkout = scratch / f"src-{commit[:12]}"
    if not checkout.exists():
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(checkout), commit],
            check=True,
            capture_output=True,
        )
        (checkout / ".venv").symlink_to(REPO / ".venv")
    return checkout


def tree_of(commit: str | None, scratch: Path) -> Path:
    """The workflow files of this checkout (commit None) or of a commit, in a fresh directory."""
    return copy_workflow(Path(tempfile.mkdtemp(prefix="bench-", dir=scratch)), checkout_of(commit, scratch))


def jobs_from_log(log: str) -> list[dict[str, Any]]:
    """(rule, wildcards, start, end) of every job, from Snakemake's console log."""
    now: datetime.datetime | None = None
    started: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    jobs = []
    for line in log.splitlines():
        if stamp := STAMP.match(line.strip()):
            now = datetime.datetime.strptime(stamp.group(1), "%a %b %d %H:%M:%S %Y")
        elif job := JOB.match(line.strip()):
            current = {"rule": job.group(1), "start": now, "wildcards": ""}
        elif current is not None and line.strip().startswith("jobid:"):
            started[line.split(":")[1].strip()] = current
        elif current is not None and line.strip().startswith("wildcards:"):
            current["wildcards"] = line.split(":", 1)[1].strip()
        elif line.startswith("Finished jobid:"):
            jobid = line.split(":")[1].split()[0].strip()
            if jobid in started:
                jobs.append({**started.pop(jobid), "end": now})
    return jobs


def job_name(job: dict[str, Any]) -> str:
    """'compile_row vr-nvl144 deepseek-remat': the rule and its wildcards' values."""
    wildcards = dict(part.split("=", 1) for part in job["wildcards"].split(", ") if "=" in part)
    return f"{job['rule']} {' '.join(wildcards.values())}".strip()


def seconds(job: dict[str, Any]) -> float:
    return (job["end"] - job["start"]).total_seconds()


def stages(jobs: list[dict[str, Any]]) -> dict[str, float]:
    spans: dict[str, list[datetime.datetime]] = {}
    for job in jobs:
        spans.setdefault(job["rule"], []).extend([job["start"], job["end"]])
    return {rule: (max(times) - min(times)).total_seconds() for rule, times in spans.items()}


def cold_then_noop(tree: Path, settings: list[str], prefix: str) -> dict[str, Any]:
    """The job (`snakemake --cores all` with `settings`) cold, then its no-op rerun (median of 3):
    wall seconds, how many jobs ran at once on average, per stage and per job; keys after `prefix`."""
    command = [*SNAKEMAKE, "--cores", "all", *settings]
    wall, log = timed(command, tree)
    jobs = jobs_from_log(log)
    return {
        f"{prefix}_s": round(wall, 1),
        f"{prefix}_jobs_at_once": round(sum(map(seconds, jobs)) / wall, 2),
        f"{prefix}_noop_rerun_s": round(median_s(command, tree), 2),
        f"{prefix}_stages_s": stages(jobs),
        f"{prefix}_jobs_s": {job_name(job): seconds(job) for job in jobs},
    }


def compiled_memory(tree: Path) -> dict[str, Any]:
    """Each compiled row's memory analysis, by target and row."""
    paths = sorted((tree / "results/compiled").glob("*/*.json"))
    return {f"{p.parent.name}/{p.stem}": json.loads(p.read_text()).get("memory") for p in paths}


def main_job(tree: Path, config: list[str]) -> dict[str, Any]:
    settings = ["--config", *config] if config else []
    dry = median_s([*SNAKEMAKE, "-n", "--quiet", *settings], tree)
    measured = cold_then_noop(tree, settings, "main_job")
    verdicts = json.loads((tree / "results/cpu/verdicts.json").read_text())
    return measured | {
        "dry_run_s": round(dry, 2),
        "verdicts": {claim["id"]: claim["verdict"] for claim in verdicts["claims"]},
        "compiled_memory": compiled_memory(tree),
    }


def whatif_stage(tree: Path) -> dict[str, Any]:
    """The what-if stage on a tree whose main job ran: cold, then the no-op rerun."""
    measured = cold_then_noop(tree, ["--config", "whatif=True"], "whatif")
    frontiers = {}
    for path in sorted((tree / "results/whatif").glob("*/frontier-*.json")):
        result = json.loads(path.read_text())
        new = [p for p in result["points"] if not p.get("cached")]
        frontiers[f"{result['target']} {result['policy']}"] = {
            "largest": result["largest_fitting_micro_batch"],
            "points": [p["micro_batch"] for p in result["points"]],
            "compiled": [p["micro_batch"] for p in new],
        }
    return measured | {"frontiers": frontiers, "whatif_compiled_memory": compiled_memory(tree)}


QUICK = "not slow and not slurm and not browser"
SLOW_PARALLEL = re.compile(r"^SLOW_PARALLEL=\((.*)\)$", re.M)


def test_tiers(checkout: Path, tiers: list[str]) -> dict[str, Any]:
    """Wall seconds of each tier asked for, run as the checkout's own envs/test.sh runs it, and
    whether it passed (the tiers write no results: no fresh copy is needed)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    measured: dict[str, Any] = {}
    if "quick" in tiers:
        started = time.monotonic()
        done = subprocess.run(["envs/test.sh", "--quick", "-q"], cwd=checkout, capture_output=True, text=True, env=env)
        measured |= {"quick_tier_s": round(time.monotonic() - started, 1), "quick_tier_passed": done.returncode == 0}
    if "slow" in tiers:
        found = SLOW_PARALLEL.search((checkout / "envs/test.sh").read_text())
        parallel = found.group(1).split() if found else []
        command = [str(checkout / ".venv/bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", *parallel]
        started = time.monotonic()
        done = subprocess.run([*command, "-m", f"not ({QUICK})"], cwd=checkout, capture_output=True, text=True, env=env)
        measured |= {"slow_tier_s": round(time.monotonic() - started, 1), "slow_tier_passed": done.returncode == 0}
    return measured


def ci_run(clone: Path) -> dict[str, Any]:
    """CI as a fresh machine meets it, on `clone` (a clean clone of this checkout's HEAD, made when
    the benchmark started): `envs/bootstrap.sh` timed, then `.ci/run` (whose own bootstrap then finds
    the environment built): wall seconds of each, under this user's home (its package cache, as a
    machine that has fetched the wheels once)."""
    env = dict(os.environ)
    bootstrap_s, _ = timed(["envs/bootstrap.sh"], clone, env)
    started = time.monotonic()
    done = subprocess.run([".ci/run"], cwd=clone, capture_output=True, text=True, env=env)
    ci_s = time.monotonic() - started
    if done.returncode != 0:  # said, and never recorded as CI's time; the other figures still are
        print(f".ci/run failed in {clone}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}", file=sys.stderr)
    return {"bootstrap_s": round(bootstrap_s, 1), "ci_s": round(bootstrap_s + ci_s, 1), "passed": done.returncode == 0}


def commit_of(checkout: Path) -> str:
    """The checkout's short commit, '-dirty' where it has changes not committed."""
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    status = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain"], capture_output=True, text=True)
    return head.stdout.strip() + ("-dirty" if status.stdout.strip() else "")


def record_figures(figures: dict[str, dict[str, Any]]) -> Path:
    """Merge `figures` into envs/timings.yaml (the README's measured times: `plan --write` renders
    them), with this machine's cores and memory."""
    import yaml

    path = REPO / "envs/timings.yaml"
    data = yaml.safe_load(path.read_text()) if path.exists() else {}
    memory_kib = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    data["machine"] = {"cores": os.cpu_count(), "memory_gib": round(memory_kib / 2**20, 1)}
    data["figures"] = {**data.get("figures", {}), **figures}
    header = (
        "# How long the README's commands take, measured: workflow/scripts/benchmark.py --record writes\n"
        "# this file (schema: workflow/schemas/timings.schema.yaml), `python -m offload_repro.plan --write`\n"
        "# renders it into the README. Each figure names the commit and day it was measured at.\n"
    )
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))
    return path


def bare_arguments(scratch: Path) -> tuple[dict[str, Any], Path]:
    """llama-baseline's CPU run record (its MaxText arguments), from a fresh copy of this checkout
    where only that row was run, when no main job was measured."""
    tree = tree_of(None, scratch)
    timed([*SNAKEMAKE, "--cores", "all", "results/cpu/runs/llama-baseline.json"], tree)
    return tree


def bare_maxtext_run(tree: Path) -> float:
    """One MaxText training run with llama-baseline's CPU arguments, as the main job recorded them
    (median of 3)."""
    run = json.loads((tree / "results/cpu/runs/llama-baseline.json").read_text())
    arguments = run["provenance"]["maxtext_arguments"]
    import maxtext

    base = str(Path(maxtext.__file__).parent / "configs/base.yml")
    work = Path(tempfile.mkdtemp(prefix="bare-"))
    arguments = [base if a.startswith("maxtext:") else a for a in arguments]
    arguments = [f"base_output_directory={work}" if a.startswith("base_output_directory=") else a for a in arguments]
    arguments = [a for a in arguments if not a.startswith("metrics_file=")]
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": run["provenance"]["xla_flags"]}
    return median_s([PYTHON, "-m", "maxtext.trainers.pre_train.train", *arguments], work, env=env)


def table(rows: list[tuple[str, Any, Any]], bare: float) -> str:
    """Each figure of both trees, against / this tree, and each tree's figure / the bare run (seconds
    only: counts and ratios have no bare-run ratio)."""

    def number(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    lines = [f"{'':44} {'this tree':>10} {'against':>10} {'ratio':>7} {'this/bare':>10} {'against/bare':>13}"]
    for name, new, old in rows:
        ratio = f"{old / new:7.2f}" if number(new) and number(old) and new else ""
        seconds = "jobs_at_once" not in name
        this_bare = f"{new / bare:10.2f}" if seconds and number(new) else ""
        against_bare = f"{old / bare:13.2f}" if seconds and number(old) else ""
        new_text, old_text = (value if value is not None else "—" for value in (new, old))
        lines.append(f"{name:44} {new_text!s:>10} {old_text!s:>10} {ratio:>7} {this_bare:>10} {against_bare:>13}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", help="a previous commit to measure side by side")
    parser.add_argument("--config", nargs="+", default=[], help="settings for this checkout's runs only")
    parser.add_argument("--repeats", type=int, default=1, help="cold main jobs per tree (alternating)")
    parser.add_argument("--skip-main-job", action="store_true", help="dry runs only (and the tiers asked for)")
    parser.add_argument("--whatif", action="store_true", help="also the what-if stage after each main job")
    parser.add_argument("--tiers", nargs="+", default=[], choices=["quick", "slow"], help="also these test tiers")
    parser.add_argument("--ci", action="store_true", help="also bootstrap and CI (.ci/run) on a clean clone of HEAD")
    parser.add_argument("--record", action="store_true", help="write this tree's figures into envs/timings.yaml")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="offload-repro-bench-"))
    # what is measured is this checkout as the benchmark starts: its commit, and CI's clone of it
    when = {"commit": commit_of(REPO), "measured_on": f"{datetime.date.today():%Y-%m-%d}"}
    if args.ci:
        subprocess.run(["git", "clone", "-q", str(REPO), str(scratch / "ci-clone")], check=True)
    trees = {"this tree": None, **({"against": args.against} if args.against else {})}
    measured: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    bare_runs: list[float] = []
    bare_tree = None if not args.skip_main_job else bare_arguments(scratch)
    for repeat in range(args.repeats):
        order = list(trees) if repeat % 2 == 0 else list(reversed(trees))
        for name in order:
            result: dict[str, Any] = {}
            if args.skip_main_job:  # each dry run on a fresh copy
                result["dry_run_s"] = round(median_s([*SNAKEMAKE, "-n", "--quiet"], tree_of(trees[name], scratch)), 2)
            else:
                tree = tree_of(trees[name], scratch)
                print(f"[{datetime.datetime.now():%H:%M:%S}] cold main job {repeat + 1}: {name}", file=sys.stderr)
                config = args.config if name == "this tree" else []
                result = main_job(tree, config) | {"tree": str(tree)}
                bare_tree = bare_tree or tree
                if args.whatif:
                    print(f"[{datetime.datetime.now():%H:%M:%S}] cold what-if {repeat + 1}: {name}", file=sys.stderr)
                    result |= whatif_stage(tree)
            if args.tiers:
                print(f"[{datetime.datetime.now():%H:%M:%S}] tiers {args.tiers} {repeat + 1}: {name}", file=sys.stderr)
                result |= test_tiers(checkout_of(trees[name], scratch), args.tiers)
            measured[name].append(result)
            # after each tree's turn, so that the bare runs meet the load the trees met
            bare_runs.append(bare_maxtext_run(bare_tree))
    bare = statistics.median(bare_runs)

    def med(name: str, pick) -> float | None:
        values = [pick(m) for m in measured.get(name, [])]
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 1) if values else None

    def side_by_side(label: str, pick) -> tuple[str, float | None, float | None]:
        return label, med("this tree", pick), med("against", pick)

    def per_name(field: str, label: str) -> list[tuple[str, float | None, float | None]]:
        """One line per stage or job name found under `field` in any measurement."""
        names = sorted({name for runs in measured.values() for m in runs for name in m.get(field, {})})
        return [side_by_side(f"{label}{name}"[:44], lambda m, n=name: m[field].get(n)) for name in names]

    jobs = [] if args.skip_main_job else ["main_job", *(["whatif"] if args.whatif else [])]
    totals = ["dry_run_s", *(f"{job}_{key}" for job in jobs for key in ("s", "jobs_at_once", "noop_rerun_s"))]
    totals += [f"{tier}_tier_s" for tier in args.tiers]
    rows = [side_by_side(f"{key} (median of {args.repeats})", lambda m, k=key: m.get(k)) for key in totals]
    if not args.skip_main_job:
        rows += per_name("main_job_stages_s", "stage ") + per_name("main_job_jobs_s", "")
        rows += per_name("whatif_stages_s", "what-if stage ")
    print(table(rows, bare))
    print(f"\nbare MaxText run (llama-baseline, CPU; median of {len(bare_runs)} medians of 3): {bare:.1f} s")
    for tier in args.tiers:
        for name in trees:
            passed = [m[f"{tier}_tier_passed"] for m in measured[name]]
            print(f"{tier} tier, {name}: {'passed' if all(passed) else 'FAILED'} ({sum(passed)} of {len(passed)})")
    if args.whatif:
        print("\ncapacity frontier: largest fitting micro batch (micro batches compiled by the search / all points)")
        for name in trees:
            for key, found in measured[name][0]["frontiers"].items():
                print(f"  {name:10} {key:40} {found['largest']!s:>4}  {found['compiled']} / {found['points']}")
    if args.against and not args.skip_main_job:
        new, old = measured["this tree"][0], measured["against"][0]
        same_verdicts = {k: v for k, v in new["verdicts"].items() if k in old["verdicts"]} == old["verdicts"]
        print(
            f"verdicts of the claims both trees have: {'identical' if same_verdicts else 'DIFFER'}; "
            f"claims only here: {sorted(set(new['verdicts']) - set(old['verdicts']))}"
        )
        for key, what in (("compiled_memory", "rows"), ("whatif_compiled_memory", "rows x targets")):
            if key in new:
                same = "identical" if new[key] == old[key] else "DIFFERS"
                print(f"compiled memory analysis of all {len(new[key])} {what}: {same}")
        if args.whatif:
            new_largest, old_largest = ({k: v["largest"] for k, v in m["frontiers"].items()} for m in (new, old))
            same = "identical" if new_largest == old_largest else "DIFFER"
            print(f"largest fitting micro batch of every policy and target: {same}")
    ci = None
    if args.ci:
        print(f"[{datetime.datetime.now():%H:%M:%S}] bootstrap and CI on a clean clone", file=sys.stderr)
        ci = ci_run(scratch / "ci-clone")
        outcome = "passed" if ci["passed"] else "FAILED"
        print(f"bootstrap on a clean clone: {ci['bootstrap_s']} s; with CI (.ci/run): {ci['ci_s']} s, {outcome}")
    (scratch / "benchmark.json").write_text(
        json.dumps({"bare_runs_s": bare_runs, "ci": ci, **measured}, indent=1, default=str)
    )
    print(f"raw numbers: {scratch / 'benchmark.json'}")
    if args.record:
        figures = {}
        if not args.skip_main_job and not args.config:
            jobs = len(measured["this tree"][0]["main_job_jobs_s"])
            how = f"the cold main job on a fresh copy, {jobs} jobs"
            figures["main_job"] = {"seconds": med("this tree", lambda m: m.get("main_job_s")), "how": how}
        if "quick" in args.tiers:
            figures["quick_tier"] = {
                "seconds": med("this tree", lambda m: m.get("quick_tier_s")),
                "how": "this checkout",
            }
        if ci:
            figures["bootstrap"] = {"seconds": ci["bootstrap_s"], "how": "a clean clone"}
        if ci and ci["passed"]:
            figures["ci"] = {"seconds": ci["ci_s"], "how": "`.ci/run` on a clean clone, its bootstrap included"}
        bare_s = {"bare_maxtext_s": round(bare, 1)} if bare_runs else {}
        recorded = {name: {**figure, **when, **bare_s} for name, figure in figures.items()}
        print(f"recorded {sorted(recorded)} in {record_figures(recorded)}")


if __name__ == "__main__":
    main()
