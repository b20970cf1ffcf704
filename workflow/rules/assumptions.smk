# Assumptions (--config assumptions=True): each unstated setting's alternatives compiled and
# predicted for the compile target, then every claim judged again under each.


# One alternative to an unstated setting, compiled for the compile target on one row.
rule compile_variant:
    input:
        tables=config["tables"],
        target=COMPILE_TARGET_FILE,
        description=COMPILE_TARGET.spec["compile"]["description_file"],
        # the profile an alternative that schedules by one takes (rule latency_profile)
        profile=lambda wildcards: PLAN.variant_profile(wildcards.variant),
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
        cli=cli,
        compile_target=COMPILE_TARGET.name,
        # on top of the alternatives the source's outcomes chose for the row's other settings
        settings=lambda wildcards: shlex.quote(json.dumps(PLAN.variant_settings(wildcards.variant, wildcards.row))),
        profile=lambda wildcards, input: " ".join(f"--latency-profile {path}" for path in input.profile),
    shell:
        "{params.cli} compile --tables {input.tables:q} --row {wildcards.row}"
        " --target {params.compile_target} --out {output}"
        " --variant {wildcards.variant} --variant-settings {params.settings} {params.profile}"
        " --work-dir results/whatif/assumptions/work/{wildcards.variant}/{wildcards.row}"
        " --programs results/programs/{params.compile_target}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


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
        cli=cli,
        compile_target=COMPILE_TARGET.name,
        calibrated_by=lambda wildcards, input: (f"--calibrated-by {input.calibrated_by}" if input.calibrated_by else ""),
    shell:
        "{params.cli} predict --tables {input.tables:q} --target {params.compile_target} --out {output}"
        " --claims {input.claims} {params.calibrated_by} {input.compiled}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# Gathers them beside the defaults, each alternative with its prediction's leave-one-out error.
rule sensitivity:
    input:
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
        cli=cli,
        compile_target=COMPILE_TARGET.name,
    shell:
        "{params.cli} sensitivity --target {params.compile_target} --out {output}"
        " --default {input.default} --variants {input.variants} --predicted {input.predicted}"
        " --default-predicted {input.default_predicted}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"
