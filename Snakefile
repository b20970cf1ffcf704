# offload-repro: every row of the source's two tables, run, compiled, checked and reported.
# Rules are thin: each calls one subcommand of the tested package in workflow/offload_repro.
from snakemake.utils import min_version

min_version("9.0")


configfile: "experiments/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/run.smk"
include: "workflow/rules/compile.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        f"results/{TARGET.name}/table.csv",
        "results/report/index.html",


onsuccess:
    # The main job ends with what held and where to read it.
    if os.path.exists(f"results/{TARGET.name}/verdicts.json"):
        shell(
            f"{CLI} summary --verdicts results/{TARGET.name}/verdicts.json --page results/report/index.html"
            f" --evidence results/{TARGET.name}/evidence.json"
        )
