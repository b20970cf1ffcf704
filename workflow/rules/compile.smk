# Compiled evidence: each row's full-size train step compiled for the GPU compile target.


rule compile_row:
    input:
        tables=config["tables"],
        target=COMPILE_TARGET_FILE,
        description=COMPILE_TARGET.spec["compile"]["description_file"],
    output:
        "results/compiled/{gpu_target}/{row}.json",
    log:
        "results/compiled/{gpu_target}/logs/{row}.log",
    params:
        cli=lambda wildcards, input, output: ["compile", "--tables", *input.tables, "--row", wildcards.row]
        + ["--target", wildcards.gpu_target, "--out", output[0]]
        + ["--work-dir", f"results/compiled/{wildcards.gpu_target}/work/{wildcards.row}"],
    resources:
        runtime=20,
        mem_mb=3000,
    run:
        run_logged(params.cli, log[0])
