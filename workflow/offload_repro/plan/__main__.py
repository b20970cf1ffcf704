"""`python -m offload_repro.plan [--write]`: print the docs' generated parts (the table of what an
edit rebuilds, the configuration's table, the layout, the README's measured times), or write them there.

`python -m offload_repro.plan --write-sample` writes the README's sample of the main job's closing
lines from the results of the main job last run here (results/cpu/); a slow test holds the sample
to what a fresh main job prints."""

import sys

from offload_repro.plan.configuration import CONFIG_PAGE, config_table
from offload_repro.plan.inputs import EDIT_PAGE, edit_table, with_generated
from offload_repro.plan.layout import LAYOUT_PAGE, layout_block
from offload_repro.plan.sample import README, SAMPLE, sample_block
from offload_repro.plan.timings import TIMES, timings_block

# (page, the name its markers give the part, the part): the import graph, the config's schema and
# defaults, the tree, the times measured (envs/timings.yaml)
GENERATED = (
    (EDIT_PAGE, "edit table", edit_table),
    (CONFIG_PAGE, "configuration table", config_table),
    (LAYOUT_PAGE, "layout", layout_block),
    (README, TIMES, timings_block),
)

if __name__ == "__main__":
    if sys.argv[1:] == ["--write-sample"]:
        README.write_text(with_generated(README.read_text(), SAMPLE, sample_block()))
    elif sys.argv[1:] == ["--write"]:
        for page, name, block in GENERATED:
            page.write_text(with_generated(page.read_text(), name, block()))
    else:
        print(*(block() for _, _, block in GENERATED), sep="\n\n")
