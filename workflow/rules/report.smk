# Every result file -> one evidence table -> verdicts -> one page per target, an entry page
# and a comparison. These steps only read JSON: on a cluster they run where Snakemake runs.


rule evidence_table:
    input:
        results=[path for paths in PLAN.evidence_files.values() for path in paths],
        code=CODE["evidence"],
    output:
        "results/{target}/evidence.json",
    log:
        "results/{target}/logs/evidence.log",
    conda:
        CONDA_ENV
    shell:
        f"{CLI} evidence --target {{wildcards.target}} --out {{output}} {{input.results}} {LOGGED}"


rule check_claims:
    input:
        evidence="results/{target}/evidence.json",
        claims=CLAIMS_FILE,
        assumptions=["results/whatif/assumptions.json"] if PLAN.sensitivity else [],
        targets=PLAN.target_files,
        code=CODE["check"],
    output:
        "results/{target}/verdicts.json",
    log:
        "results/{target}/logs/check.log",
    conda:
        CONDA_ENV
    params:
        # with the sensitivity stage: each claim judged by compiled evidence marked robust or not
        assumptions=lambda wildcards, input: (
            f"--assumptions {input.assumptions} --tables {TABLES}" if input.assumptions else ""
        ),
    shell:
        f"{CLI} check --evidence {{input.evidence}} --claims {{input.claims}} --out {{output}}"
        f" --compile-target {COMPILE_TARGET.name} {{params.assumptions}} {LOGGED}"


rule report:
    input:
        tables=config["tables"],
        evidence="results/{target}/evidence.json",
        verdicts="results/{target}/verdicts.json",
        assumptions=["results/whatif/assumptions.json"] if PLAN.sensitivity else [],
        code=CODE["report"],
    output:
        "results/report/{target}.html",
    log:
        "results/{target}/logs/report.log",
    conda:
        CONDA_ENV
    params:
        assumptions=lambda wildcards, input: (f"--assumptions {input.assumptions}" if input.assumptions else ""),
    shell:
        f"{CLI} report --tables {TABLES} --evidence {{input.evidence}} --verdicts {{input.verdicts}}"
        f" --out {{output}} {{params.assumptions}} {LOGGED}"


rule index:
    input:
        tables=config["tables"],
        pages=[f"results/report/{name}.html" for name in PLAN.page_targets],
        verdicts=[f"results/{name}/verdicts.json" for name in PLAN.page_targets],
        evidence=[f"results/{name}/evidence.json" for name in PLAN.page_targets],
        code=CODE["index"],
    output:
        index="results/report/index.html",
        compare="results/report/compare.html",
    log:
        "results/logs/index.log",
    conda:
        CONDA_ENV
    shell:
        f"{CLI} index --tables {TABLES} --out {{output.index}} --compare {{output.compare}} --pages {{input.pages}}"
        f" --verdicts {{input.verdicts}} --evidence {{input.evidence}} {LOGGED}"
