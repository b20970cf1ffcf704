# Compiled evidence: each row's full-size train step compiled for a GPU target (the compile target
# in a default run; every SLURM GPU target with the what-if), its memory read per device.
# Analytic evidence: the bytes of every saved or offloaded activation, from MaxText's configs.


rule compile_row:
    input:
        tables=config["tables"],
        target="experiments/targets/{gpu_target}.yaml",
        description=lambda wildcards: load_target(wildcards.gpu_target).spec["compile"]["description_file"],
        code=CODE["compile"],
    output:
        "results/compiled/{gpu_target}/{row}.json",
    log:
        "results/compiled/{gpu_target}/logs/{row}.log",
    priority: lambda wildcards: PLAN.compile_priority(wildcards.gpu_target)
    conda:
        CONDA_ENV
    resources:
        runtime=20,
        mem_mb=3000,
    params:
        fork_server=fork_server,
    shell:
        f"{CLI} compile {{params.fork_server}} --tables {TABLES} --row {{wildcards.row}}"
        f" --target {{wildcards.gpu_target}} --out {{output}}"
        f" --work-dir results/compiled/{{wildcards.gpu_target}}/work/{{wildcards.row}}"
        f" --programs results/programs/{{wildcards.gpu_target}} {LOGGED}"


rule analytic:
    input:
        tables=config["tables"],
        tensors="experiments/tensors.yaml",
        code=CODE["analytic"],
    output:
        "results/analytic.json",
    log:
        "results/logs/analytic.log",
    conda:
        CONDA_ENV
    shell:
        f"{CLI} analytic --tables {TABLES} --out {{output}} {LOGGED}"
