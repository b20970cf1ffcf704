# Measured evidence: one real MaxText training run per row on the chosen target.


rule run_row:
    input:
        tables=config["tables"],
        target=TARGET_FILE,
    output:
        "results/{target}/runs/{row}.json",
    log:
        "results/{target}/logs/run-{row}.log",
    params:
        cli=lambda wildcards, input, output: ["run", "--tables", *input.tables, "--row", wildcards.row]
        + ["--target", wildcards.target, "--out", output[0], "--work-dir", f"results/{wildcards.target}/work/{wildcards.row}"]
        + ["--container-runtime", config["container_runtime"]]
        + (["--allow-unpinned-container"] if config["allow_unpinned_container"] else []),
    resources:
        **RUN_RESOURCES,
    run:
        run_logged(params.cli, log[0])


rule collect_runs:
    input:
        expand("results/{{target}}/runs/{row}.json", row=ROW_IDS),
    output:
        "results/{target}/table.csv",
    log:
        "results/{target}/logs/collect.log",
    params:
        cli=lambda wildcards, input, output: ["collect", "--out", output[0], *input],
    run:
        run_logged(params.cli, log[0])
