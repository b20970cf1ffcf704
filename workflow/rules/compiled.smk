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
        # the alternatives the source's outcomes chose (experiments/outcome-settings.yaml's record)
        chosen=PLAN.chosen_option,
    shell:
        "{params.cli} compile --tables {input.tables:q} --row {wildcards.row}"
        " --target {wildcards.gpu_target} --out {output} {params.chosen}"
        " --work-dir results/compiled/{wildcards.gpu_target}/work/{wildcards.row}"
        " --programs results/programs/{wildcards.gpu_target}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# Where the source's outcomes chose settings that change a row, the row under the defaults too, for
# the compile target: every claim is judged under both (the page shows both).
rule compile_defaults:
    input:
        tables=config["tables"],
        target=COMPILE_TARGET_FILE,
        description=COMPILE_TARGET.spec["compile"]["description_file"],
        code=CODE["compile"],
    output:
        "results/defaults/compiled/{row}.json",
    log:
        "results/defaults/compiled/logs/{row}.log",
    conda:
        CONDA_ENV
    resources:
        runtime=20,
        mem_mb=3000,
    params:
        cli=cli,
        compile_target=COMPILE_TARGET.name,
    shell:
        "{params.cli} compile --tables {input.tables:q} --row {wildcards.row}"
        " --target {params.compile_target} --out {output}"
        " --work-dir results/defaults/compiled/work/{wildcards.row}"
        " --programs results/programs/{params.compile_target}"
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
        chosen=PLAN.chosen_option,
    shell:
        "{params.cli} analytic --tables {input.tables:q} --out {output} {params.chosen}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# The same bytes under the defaults, where the source's outcomes chose settings that change a row.
rule analytic_defaults:
    input:
        tables=config["tables"],
        tensors="experiments/tensors.yaml",
        code=CODE["analytic"],
    output:
        "results/defaults/analytic.json",
    log:
        "results/defaults/logs/analytic.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
    shell:
        "{params.cli} analytic --tables {input.tables:q} --out {output} > {log} 2>&1 || (cat {log} >&2; exit 1)"
