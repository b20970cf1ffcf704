"""`python -m offload_repro.plan [--write]`: print the docs' generated parts (the table of what an
edit rebuilds, the configuration's table, the layout), or write them there."""

import sys

from offload_repro.plan.configuration import CONFIG_PAGE, config_table, readme_with_config_table
from offload_repro.plan.inputs import EDIT_PAGE, edit_table, readme_with_table
from offload_repro.plan.layout import LAYOUT_PAGE, layout_block, readme_with_layout

if sys.argv[1:] == ["--write"]:
    for page, write in (
        (EDIT_PAGE, readme_with_table),
        (CONFIG_PAGE, readme_with_config_table),
        (LAYOUT_PAGE, readme_with_layout),
    ):
        page.write_text(write(page.read_text()))
else:
    print(edit_table(), config_table(), layout_block(), sep="\n\n")
