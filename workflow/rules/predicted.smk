# Predicted evidence: each compiled row's step time from its program, replayed at the target's
# rates; other targets than the calibration target take its calibration (experiments/speed.yaml).


rule predict:
    input:
        tables=config["tables"],
        compiled=expand("results/compiled/{{gpu_target}}/{row}.json", row=PLAN.row_ids),
        target="experiments/targets/{gpu_target}.yaml",
        calibrated_by=lambda wildcards: PLAN.calibration_source(wildcards.gpu_target),
        claims=CLAIMS_FILE,
        code=CODE["predict"],
    output:
        "results/predicted/{gpu_target}.json",
    log:
        "results/predicted/logs/{gpu_target}.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
        calibrated_by=lambda wildcards, input: (f"--calibrated-by {input.calibrated_by}" if input.calibrated_by else ""),
    shell:
        "{params.cli} predict --tables {input.tables:q} --target {wildcards.gpu_target} --out {output}"
        " --claims {input.claims} {params.calibrated_by} {input.compiled}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# Every row predicted from its programs under the defaults (compile_defaults), for the verdicts under them.
rule predict_defaults:
    input:
        tables=config["tables"],
        compiled=PLAN.defaults_compiled(COMPILE_TARGET.name),
        target=COMPILE_TARGET_FILE,
        claims=CLAIMS_FILE,
        code=CODE["predict"],
    output:
        f"results/defaults/predicted/{COMPILE_TARGET.name}.json",
    log:
        "results/defaults/predicted/logs/predict.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
        compile_target=COMPILE_TARGET.name,
    shell:
        "{params.cli} predict --tables {input.tables:q} --target {params.compile_target} --out {output}"
        " --claims {input.claims} {input.compiled}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# A profile of each compiled row's instructions costed by the step-time model, for XLA's scheduler:
# the alternative `xla-latency-estimator.profile-guided` compiles the rows again with it.
rule latency_profile:
    input:
        tables=config["tables"],
        compiled=expand("results/compiled/{{gpu_target}}/{row}.json", row=PLAN.row_ids),
        target="experiments/targets/{gpu_target}.yaml",
        claims=CLAIMS_FILE,
        code=CODE["latency_profile"],
    output:
        "results/profiles/{gpu_target}.pbtxt",
    log:
        "results/profiles/logs/{gpu_target}.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
    shell:
        "{params.cli} latency_profile --tables {input.tables:q} --target {wildcards.gpu_target} --out {output}"
        " --claims {input.claims} {input.compiled}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# A device target whose runs and programs are kept as data (experiments/device-results/): each
# program replayed by the step-time model against the step the chip measured, under the chip's own
# calibration, that of the runs measured elsewhere and the source's, with and without the model's
# host-copy terms.
rule predict_device:
    input:
        programs=lambda wildcards: kept_programs(wildcards.target),
        runs=lambda wildcards: kept_results(wildcards.target),
        calibrated_by=f"results/predicted/{PLAN.calibration_target}.json",
        target="experiments/targets/{target}.yaml",
        reads=["experiments/speed.yaml", "experiments/validation.yaml"],
        code=CODE["predict_device"],
    output:
        "results/{target}/device-prediction.json",
    log:
        "results/{target}/logs/device-prediction.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
    shell:
        "{params.cli} predict_device --target {wildcards.target} --calibrated-by {input.calibrated_by} --out {output}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# The step-time model's error on ratios, per kind of pair, in percentage points: the source's pairs of
# published throughputs, and each device's pairs of kept programs and sweep points, with and without
# the host-copy and overlap terms (with the validation stage, also its runs' pairs of two scales);
# each pair's regime and the speed claims' records.
rule pair_errors:
    input:
        tables=config["tables"],
        compiled=expand(f"results/compiled/{PLAN.calibration_target}/{{row}}.json", row=PLAN.row_ids),
        prediction=f"results/predicted/{PLAN.calibration_target}.json",
        kept=[path for name in PAIR_DEVICES for path in [*kept_results(name), *kept_programs(name), *kept_sweep(name)]],
        targets=PLAN.target_files,
        claims=CLAIMS_FILE,
        reads=["experiments/speed.yaml"],
        # with the validation stage: two scales of one placement, from its runs measured elsewhere
        validation=["results/validation/model.json"] if PLAN.measured_runs else [],
        code=CODE["predict_pairs"],
    output:
        "results/predicted/pair-errors.json",
    log:
        "results/predicted/logs/pair-errors.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
        devices=" ".join(PAIR_DEVICES),
        target=PLAN.calibration_target,
        # the source's and the what-if targets' regimes under the settings the source's outcomes chose
        chosen=PLAN.chosen_option,
        validation=lambda wildcards, input: (f"--validation {input.validation}" if input.validation else ""),
    shell:
        "{params.cli} predict_pairs --tables {input.tables:q} --target {params.target} --out {output}"
        " --claims {input.claims} --prediction {input.prediction} {input.compiled} --devices {params.devices}"
        " {params.validation} {params.chosen}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"
