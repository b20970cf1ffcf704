# One-GPU targets only: host link bandwidth at the offloaded tensors' sizes.


rule probe_transfers:
    input:
        tables=config["tables"],
        target=TARGET_FILE,
    output:
        "results/{target}/probe.json",
    log:
        "results/{target}/logs/probe.log",
    params:
        cli=lambda wildcards, input, output: ["probe", "--tables", *input.tables, "--target", wildcards.target]
        + ["--out", output[0]],
    run:
        run_logged(params.cli, log[0])
