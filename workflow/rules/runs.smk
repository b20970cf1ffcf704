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
        unpinned="--allow-unpinned-container" if config["allow_unpinned_container"] else "",
        runtime=config["container_runtime"],
        fork_server=fork_server,
    shell:
        f"{CLI} run {{params.fork_server}} --tables {TABLES} --row {{wildcards.row}}"
        " --target {wildcards.target} --out {output}"
        " --work-dir results/{wildcards.target}/work/{wildcards.row} --container-runtime {params.runtime}"
        f" {{params.unpinned}} {LOGGED}"


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
    shell:
        f"{CLI} collect --out {{output}} {{input.runs}} {LOGGED}"


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
            unpinned="--allow-unpinned-container" if config["allow_unpinned_container"] else "",
            runtime=config["container_runtime"],
        shell:
            f"{CLI} preflight --tables {TABLES} --target {{wildcards.target}} --out {{output}}"
            " --work-dir results/{wildcards.target}/work/preflight --container-runtime {params.runtime}"
            f" {{params.unpinned}} {{input.compiled}} {LOGGED}"


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
    shell:
        f"{CLI} probe --tables {TABLES} --target {{wildcards.target}} --out {{output}} {LOGGED}"
