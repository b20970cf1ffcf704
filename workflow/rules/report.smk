# Claims judged by every evidence kind available, then the static HTML report.


rule check_claims:
    input:
        tables=config["tables"],
        claims=CLAIMS_FILE,
        runs=expand("results/{{target}}/runs/{row}.json", row=ROW_IDS),
        compiled=COMPILED,
    output:
        "results/{target}/verdicts.json",
    log:
        "results/{target}/logs/check.log",
    params:
        cli=lambda wildcards, input, output: ["check", *evidence_arguments(input, wildcards.target)]
        + ["--out", output[0]],
    run:
        run_logged(params.cli, log[0])


rule report:
    input:
        tables=config["tables"],
        claims=CLAIMS_FILE,
        runs=expand("results/{target}/runs/{row}.json", target=TARGET.name, row=ROW_IDS),
        compiled=COMPILED,
        verdicts=f"results/{TARGET.name}/verdicts.json",
        probe=PROBE,
        template=["report/index.html.j2", "report/style.css"],
    output:
        "results/report/index.html",
    log:
        "results/report/report.log",
    params:
        cli=lambda wildcards, input, output: ["report", *evidence_arguments(input, TARGET.name)]
        + ["--verdicts", input.verdicts, "--out", output[0]]
        + (["--probe", *input.probe] if input.probe else []),
    run:
        run_logged(params.cli, log[0])
