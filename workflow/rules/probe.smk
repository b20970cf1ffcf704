# One-GPU targets only: host link bandwidth at the offloaded tensors' sizes.


rule probe_transfers:
    input:
        tables=config["tables"],
        target=TARGET_FILE,
        code=CODE["probe"],
    output:
        "results/{target}/probe.json",
    log:
        "results/{target}/logs/probe.log",
    conda:
        CONDA_ENV
    resources:
        gpu=1,
    shell:
        f"{CLI} probe --tables {TABLES} --target {{wildcards.target}} --out {{output}} {LOGGED}"
