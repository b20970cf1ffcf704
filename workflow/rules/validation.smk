# Validation (--config validation=True): the step-time model against published runs measured
# elsewhere (experiments/measured-elsewhere/), each compiled here as it ran, for its GPU at its
# node count, through the one cache of compiled programs.


rule compile_measured:
    input:
        target=lambda wildcards: f"experiments/targets/{PLAN.measured_runs[wildcards.measured_run]}.yaml",
        code=CODE["compile_measured"],
    output:
        "results/validation/compiled/{measured_run}.json",
    log:
        "results/validation/compiled/logs/{measured_run}.log",
    conda:
        CONDA_ENV
    resources:
        runtime=20,
        mem_mb=3000,
    params:
        cli=cli,
        programs=lambda wildcards: f"results/programs/{PLAN.measured_runs[wildcards.measured_run]}",
        fork_server=fork_server,
    shell:
        "{params.cli} compile_measured {params.fork_server} --run {wildcards.measured_run} --out {output}"
        " --work-dir results/validation/work/{wildcards.measured_run} --programs {params.programs}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# Every run predicted and calibrated three ways; (c) carries the source's own calibration.
rule validate_model:
    input:
        compiled=expand("results/validation/compiled/{measured_run}.json", measured_run=PLAN.measured_runs),
        calibrated_by=f"results/predicted/{PLAN.calibration_target}.json",
        code=CODE["validate_model"],
    output:
        "results/validation/model.json",
    log:
        "results/validation/logs/model.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
    shell:
        "{params.cli} validate_model --out {output} --calibrated-by {input.calibrated_by} {input.compiled}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"
