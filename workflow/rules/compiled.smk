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
        cli=cli,
    shell:
        "{params.cli} compile --tables {input.tables:q} --row {wildcards.row}"
        " --target {wildcards.gpu_target} --out {output}"
        " --work-dir results/compiled/{wildcards.gpu_target}/work/{wildcards.row}"
        " --programs results/programs/{wildcards.gpu_target}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


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
    params:
        cli=cli,
    shell:
        "{params.cli} analytic --tables {input.tables:q} --out {output} > {log} 2>&1 || (cat {log} >&2; exit 1)"
