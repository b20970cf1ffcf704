# What-if (--config whatif=True): what compiled evidence says about hardware nobody has run on yet.
# Its grid of rows x SLURM GPU targets is compile_row's (compiled.smk); here, each placement
# policy's capacity frontier and the transfer budget.


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
        cli=cli,
        chosen=PLAN.chosen_option,
    shell:
        "{params.cli} frontier --tables {input.tables:q} --policy {wildcards.policy}"
        " --target {wildcards.gpu_target} --out {output} --programs results/programs/{wildcards.gpu_target}"
        " {params.chosen}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"


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
    params:
        cli=cli,
    shell:
        "{params.cli} budget --tables {input.tables:q} --out {output} {input.compiled}"
        " > {log} 2>&1 || (cat {log} >&2; exit 1)"
