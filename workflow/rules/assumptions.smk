# Assumptions (--config assumptions=True): each unstated setting's alternatives compiled and
# predicted for the compile target, then every claim judged again under each.


# One alternative to an unstated setting, compiled for the compile target on one row.
rule compile_variant:
    input:
        tables=config["tables"],
        target=COMPILE_TARGET_FILE,
        description=COMPILE_TARGET.spec["compile"]["description_file"],
        code=CODE["compile"],
    output:
        "results/whatif/assumptions/{variant}/{row}.json",
    log:
        "results/whatif/assumptions/logs/{variant}/{row}.log",
    conda:
        CONDA_ENV
    resources:
        runtime=20,
        mem_mb=3000,
    params:
        settings=lambda wildcards: shlex.quote(json.dumps(PLAN.variants[wildcards.variant]["settings"])),
        fork_server=fork_server,
    shell:
        f"{CLI} compile {{params.fork_server}} --tables {TABLES} --row {{wildcards.row}}"
        f" --target {COMPILE_TARGET.name} --out {{output}}"
        f" --variant {{wildcards.variant}} --variant-settings {{params.settings}}"
        f" --work-dir results/whatif/assumptions/work/{{wildcards.variant}}/{{wildcards.row}}"
        f" --programs results/programs/{COMPILE_TARGET.name} {LOGGED}"


# Every row predicted under one alternative (its own compiles where it affects a row),
# so that the speed claims judged by prediction are re-judged under it too.
rule predict_variant:
    input:
        tables=config["tables"],
        compiled=lambda wildcards: PLAN.variant_compiled(wildcards.variant),
        target=COMPILE_TARGET_FILE,
        calibrated_by=PLAN.calibration_source(COMPILE_TARGET.name),
        claims=CLAIMS_FILE,
        code=CODE["predict"],
    output:
        "results/whatif/assumptions/{variant}/predicted.json",
    log:
        "results/whatif/assumptions/logs/{variant}/predicted.log",
    conda:
        CONDA_ENV
    params:
        calibrated_by=lambda wildcards, input: (f"--calibrated-by {input.calibrated_by}" if input.calibrated_by else ""),
    shell:
        f"{CLI} predict --tables {TABLES} --target {COMPILE_TARGET.name} --out {{output}}"
        f" --claims {{input.claims}} {{params.calibrated_by}} {{input.compiled}} {LOGGED}"


# Gathers them, with the combination of alternatives that fits the published memory best.
rule sensitivity:
    input:
        tables=config["tables"],
        default=expand("results/compiled/{gpu_target}/{row}.json", gpu_target=COMPILE_TARGET.name, row=PLAN.varied_rows),
        variants=PLAN.variant_files,
        predicted=PLAN.variant_predictions,
        default_predicted=f"results/predicted/{COMPILE_TARGET.name}.json",
        code=CODE["sensitivity"],
    output:
        "results/whatif/assumptions.json",
    log:
        "results/whatif/logs/assumptions.log",
    conda:
        CONDA_ENV
    params:
        fork_server=fork_server,
    shell:
        f"{CLI} sensitivity {{params.fork_server}} --tables {TABLES} --target {COMPILE_TARGET.name}"
        " --out {output}"
        f" --programs results/programs/{COMPILE_TARGET.name} --work-dir results/whatif/assumptions/work/fit"
        f" --default {{input.default}} --variants {{input.variants}} --predicted {{input.predicted}}"
        f" --default-predicted {{input.default_predicted}} {LOGGED}"
