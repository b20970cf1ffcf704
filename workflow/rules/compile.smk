# Compiled evidence: each row's full-size train step compiled for the GPU compile target.
# Analytic evidence: the bytes of every saved or offloaded activation, from MaxText's configs.


rule compile_row:
    input:
        tables=config["tables"],
        target=COMPILE_TARGET_FILE,
        description=COMPILE_TARGET.spec["compile"]["description_file"],
        code=CODE["compile"],
    output:
        "results/compiled/{gpu_target}/{row}.json",
    log:
        "results/compiled/{gpu_target}/logs/{row}.log",
    resources:
        runtime=20,
        mem_mb=3000,
    conda:
        CONDA_ENV
    shell:
        f"{CLI} compile --tables {TABLES} --row {{wildcards.row}} --target {{wildcards.gpu_target}} --out {{output}}"
        f" --work-dir results/compiled/{{wildcards.gpu_target}}/work/{{wildcards.row}} {LOGGED}"


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
