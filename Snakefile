# offload-repro: every row of the source's two tables, run, compiled, checked and reported.
# Rules are thin: each calls one command of the tested package in workflow/offload_repro. One rule
# file per topic, as the README has a section for each (runs, compiled, predicted, what-if,
# assumptions, report).
from snakemake.utils import min_version

min_version("9.0")


configfile: "experiments/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/runs.smk"
include: "workflow/rules/compiled.smk"
include: "workflow/rules/predicted.smk"
include: "workflow/rules/whatif.smk"
include: "workflow/rules/assumptions.smk"
include: "workflow/rules/validation.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        f"results/{TARGET.name}/table.csv",
        "results/report/index.html",
        # with --config infer=True, the search for the settings the source's outcomes decide
        ["results/inference/search.json"] if PLAN.infer else [],


onsuccess:
    # The main job ends with what held and where to read it.
    if os.path.exists(f"results/{TARGET.name}/verdicts.json"):
        shell(
            f"{CLI} summary --verdicts results/{TARGET.name}/verdicts.json --page results/report/index.html"
            f" --evidence results/{TARGET.name}/evidence.json"
        )
