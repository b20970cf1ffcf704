# The settings the source's outcomes decide (--config infer=True): the declared search of
# experiments/outcome-settings.yaml, each candidate compiled for its compile target through the one
# cache of programs, checked against the file's record. Its compiles are the stage's own processes,
# a candidate's later rows only once its first hold, so that the search stays bounded.


rule infer_settings:
    input:
        tables=config["tables"],
        claims=CLAIMS_FILE,
        target=COMPILE_TARGET_FILE,
        description=COMPILE_TARGET.spec["compile"]["description_file"],
        code=CODE["infer"],
    output:
        "results/inference/search.json",
    log:
        "results/inference/logs/search.log",
    conda:
        CONDA_ENV
    # two compiles at once (each about 3 GB); Snakemake lowers it to --cores where fewer are given
    threads: 2
    resources:
        runtime=240,
        mem_mb=6000,
    params:
        cli=cli,
        compile_target=COMPILE_TARGET.name,
    shell:
        "{params.cli} infer --tables {input.tables:q} --claims {input.claims} --out {output}"
        " --programs results/programs/{params.compile_target} --jobs {threads}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"
