# Every result file -> one evidence table -> verdicts -> one page per target and an entry page.
# These steps only read JSON: on a cluster they run where Snakemake runs.


rule evidence_table:
    input:
        results=lambda wildcards: PLAN.evidence_inputs(wildcards.target),
        code=CODE["evidence"],
    output:
        "results/{target}/evidence.json",
    log:
        "results/{target}/logs/evidence.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
    shell:
        "{params.cli} evidence --target {wildcards.target} --out {output} {input.results}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# The same evidence with the compile target's programs and prediction under the defaults, where the
# source's outcomes chose settings that change a row.
rule evidence_defaults:
    input:
        results=lambda wildcards: PLAN.defaults_evidence_inputs(wildcards.target),
        code=CODE["evidence"],
    output:
        "results/{target}/evidence-defaults.json",
    log:
        "results/{target}/logs/evidence-defaults.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
    shell:
        "{params.cli} evidence --target {wildcards.target} --out {output} {input.results}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


rule check_claims:
    input:
        tables=config["tables"],
        evidence="results/{target}/evidence.json",
        claims=CLAIMS_FILE,
        assumptions=lambda wildcards: (
            ["results/whatif/assumptions.json"] if PLAN.sensitivity and wildcards.target == TARGET.name else []
        ),
        targets=PLAN.target_files,
        # each claim judged again under the defaults, where the chosen settings change a row
        defaults=lambda wildcards: (
            ["results/{target}/evidence-defaults.json"]
            if PLAN.defaults_rows and wildcards.target == TARGET.name
            else []
        ),
        # a predicted ratio of two placements takes the model's error on such ratios
        pairs=lambda wildcards: (["results/predicted/pair-errors.json"] if wildcards.target == TARGET.name else []),
        code=CODE["check"],
    output:
        "results/{target}/verdicts.json",
    log:
        "results/{target}/logs/check.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
        # a device target's page shows its own chip only: no compile target's programs
        compile_target=lambda wildcards: (
            f"--compile-target {COMPILE_TARGET.name}" if wildcards.target == TARGET.name else ""
        ),
        # with the sensitivity stage: each claim judged by compiled evidence marked robust or not
        assumptions=lambda wildcards, input: (f"--assumptions {input.assumptions}" if input.assumptions else ""),
        defaults=lambda wildcards, input: (f"--defaults-evidence {input.defaults}" if input.defaults else ""),
        pairs=lambda wildcards, input: (f"--pair-errors {input.pairs}" if input.pairs else ""),
    shell:
        "{params.cli} check --tables {input.tables:q} --evidence {input.evidence} --claims {input.claims} --out {output}"
        " {params.compile_target} {params.assumptions} {params.defaults} {params.pairs}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


rule report:
    input:
        tables=config["tables"],
        evidence="results/{target}/evidence.json",
        verdicts="results/{target}/verdicts.json",
        assumptions=lambda wildcards: (
            ["results/whatif/assumptions.json"] if PLAN.sensitivity and wildcards.target == TARGET.name else []
        ),
        # the step-time model's error on ratios, on this run's target's appendix; a device's page sets its
        # pairs' regimes beside the source's
        pairs=lambda wildcards: (
            ["results/predicted/pair-errors.json"]
            if wildcards.target == TARGET.name or wildcards.target in PAIR_DEVICES
            else []
        ),
        code=CODE["report"],
    output:
        page="results/report/{target}.html",
        appendix="results/report/{target}-appendix.html",
    log:
        "results/{target}/logs/report.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
        assumptions=lambda wildcards, input: (f"--assumptions {input.assumptions}" if input.assumptions else ""),
        pairs=lambda wildcards, input: (f"--pairs {input.pairs}" if input.pairs else ""),
    shell:
        "{params.cli} report --tables {input.tables:q} --evidence {input.evidence} --verdicts {input.verdicts}"
        " --out {output.page} {params.assumptions} {params.pairs}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


rule index:
    input:
        pages=[f"results/report/{name}.html" for name in PLAN.page_targets],
        verdicts=[f"results/{name}/verdicts.json" for name in PLAN.page_targets],
        code=CODE["index"],
    output:
        "results/report/index.html",
    log:
        "results/logs/index.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
    shell:
        "{params.cli} index --out {output} --pages {input.pages} --verdicts {input.verdicts}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"
