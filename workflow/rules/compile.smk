# Compiled evidence: each row's full-size train step compiled for the GPU compile target.
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


# After the target's grid: the policy's point at its row's micro batch is that row's program, read
# from the cache the grid filled, never compiled twice at once.
rule frontier:
    input:
        tables=config["tables"],
        grid=expand("results/compiled/{{gpu_target}}/{row}.json", row=PLAN.row_ids),
        target="experiments/targets/{gpu_target}.yaml",
        description=lambda wildcards: load_target(wildcards.gpu_target).spec["compile"]["description_file"],
        code=CODE["frontier"],
    output:
        "results/whatif/{gpu_target}/frontier-{policy}.json",
    log:
        "results/whatif/{gpu_target}/logs/frontier-{policy}.log",
    priority: FRONTIER_PRIORITY
    conda:
        CONDA_ENV
    resources:
        runtime=120,
        mem_mb=4000,
    params:
        fork_server=fork_server,
    shell:
        f"{CLI} frontier {{params.fork_server}} --tables {TABLES} --policy {{wildcards.policy}}"
        f" --target {{wildcards.gpu_target}} --out {{output}} --programs results/programs/{{wildcards.gpu_target}} {LOGGED}"


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
        calibrated_by=lambda wildcards, input: (f"--calibrated-by {input.calibrated_by}" if input.calibrated_by else ""),
    shell:
        f"{CLI} predict --tables {TABLES} --target {{wildcards.gpu_target}} --out {{output}}"
        f" --claims {{input.claims}} {{params.calibrated_by}} {{input.compiled}} {LOGGED}"


rule budget:
    input:
        tables=config["tables"],
        compiled=expand("results/compiled/{gpu_target}/{row}.json", gpu_target=PLAN.grid_targets, row=PLAN.row_ids),
        targets=expand("experiments/targets/{name}.yaml", name=PLAN.grid_targets),
        code=CODE["budget"],
    output:
        "results/whatif/budget.json",
    log:
        "results/whatif/logs/budget.log",
    conda:
        CONDA_ENV
    shell:
        f"{CLI} budget --tables {TABLES} --out {{output}} {{input.compiled}} {LOGGED}"


# Sensitivity: one alternative to an unstated setting, compiled for the compile target on one row.
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


# Sensitivity: every row predicted under one alternative (its own compiles where it affects a row),
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
