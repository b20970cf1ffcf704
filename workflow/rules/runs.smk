# Measured evidence: one real MaxText training run per row on the chosen target, gathered in a
# table; on a SLURM target, the preflight every row's job waits for; on a one-GPU target, the
# host link's bandwidth at the offloaded tensors' sizes.


rule run_row:
    input:
        tables=config["tables"],
        target=TARGET_FILE,
        code=CODE["run"],
        preflight=PLAN.preflight,
    output:
        "results/{target}/runs/{row}.json",
    log:
        "results/{target}/logs/run-{row}.log",
    conda:
        CONDA_ENV
    resources:
        **PLAN.run_resources,
    params:
        cli=cli,
        unpinned="--allow-unpinned-container" if config["allow_unpinned_container"] else "",
        runtime=config["container_runtime"],
    shell:
        "{params.cli} run --tables {input.tables:q} --row {wildcards.row}"
        " --target {wildcards.target} --out {output}"
        " --work-dir results/{wildcards.target}/work/{wildcards.row} --container-runtime {params.runtime}"
        " {params.unpinned}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


rule collect_runs:
    input:
        runs=expand("results/{{target}}/runs/{row}.json", row=PLAN.row_ids),
        code=CODE["collect"],
    output:
        "results/{target}/table.csv",
    log:
        "results/{target}/logs/collect.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
    shell:
        "{params.cli} collect --out {output} {input.runs} > {log} 2>&1 || (cat {log} >&2; exit 1)"


if TARGET.launcher == "slurm":

    rule preflight:
        input:
            tables=config["tables"],
            target=TARGET_FILE,
            code=CODE["preflight"],
            compiled=PLAN.preflight_compiled,
        output:
            "results/{target}/preflight.json",
        log:
            "results/{target}/logs/preflight.log",
        conda:
            CONDA_ENV
        resources:
            **PLAN.preflight_resources,
        params:
            cli=cli,
            unpinned="--allow-unpinned-container" if config["allow_unpinned_container"] else "",
            runtime=config["container_runtime"],
        shell:
            "{params.cli} preflight --tables {input.tables:q} --target {wildcards.target} --out {output}"
            " --work-dir results/{wildcards.target}/work/preflight --container-runtime {params.runtime}"
            " {params.unpinned} {input.compiled}"
            " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# One-GPU targets only: the host link measured at the offloaded tensors' sizes.
rule probe_transfers:
    input:
        tables=config["tables"],
        target=TARGET_FILE,
        code=CODE["probe"],
    output:
        "results/{target}/probe.json",
    log:
        "results/{target}/logs/probe.log",
    conda:
        CONDA_ENV
    resources:
        gpu=1,
    params:
        cli=cli,
    shell:
        "{params.cli} probe --tables {input.tables:q} --target {wildcards.target} --out {output}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"
