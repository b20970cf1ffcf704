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
    shell:
        "{params.cli} compile_measured --run {wildcards.measured_run} --out {output}"
        " --work-dir results/validation/work/{wildcards.measured_run} --programs {params.programs}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


# The runs' timed steps were scheduled with a profile recorded on their cluster, which is not
# published: a profile of the model's own costs of each run's program stands in for it, and each
# run is compiled again with it.
rule measured_profile:
    input:
        compiled=expand("results/validation/compiled/{measured_run}.json", measured_run=PLAN.measured_runs),
        code=CODE["measured_profile"],
    output:
        "results/validation/profile.pbtxt",
    log:
        "results/validation/logs/profile.log",
    conda:
        CONDA_ENV
    params:
        cli=cli,
    shell:
        "{params.cli} measured_profile --out {output} {input.compiled} > {log} 2>&1 || (cat {log} >&2; exit 1)"


rule compile_measured_profiled:
    input:
        target=lambda wildcards: f"experiments/targets/{PLAN.measured_runs[wildcards.measured_run]}.yaml",
        profile="results/validation/profile.pbtxt",
        code=CODE["compile_measured"],
    output:
        "results/validation/profiled/{measured_run}.json",
    log:
        "results/validation/profiled/logs/{measured_run}.log",
    conda:
        CONDA_ENV
    resources:
        runtime=20,
        mem_mb=3000,
    params:
        cli=cli,
        programs=lambda wildcards: f"results/programs/{PLAN.measured_runs[wildcards.measured_run]}",
    shell:
        "{params.cli} compile_measured --run {wildcards.measured_run} --out {output}"
        " --work-dir results/validation/work-profiled/{wildcards.measured_run} --programs {params.programs}"
        " --latency-profile {input.profile} > {log} 2>&1 || (cat {log} >&2; exit 1)"


# Every run predicted and calibrated three ways; (c) carries the source's own calibration.
rule validate_model:
    input:
        compiled=expand("results/validation/compiled/{measured_run}.json", measured_run=PLAN.measured_runs),
        profiled=expand("results/validation/profiled/{measured_run}.json", measured_run=PLAN.measured_runs),
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
        "{params.cli} validate_model --out {output} --calibrated-by {input.calibrated_by}"
        " --profiled {input.profiled} -- {input.compiled}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"
