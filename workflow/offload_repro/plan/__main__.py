"""`python -m offload_repro.plan [--write]`: print the README's generated parts (the table of what
an edit rebuilds, the configuration's table, the layout), or write them there."""

import sys

from offload_repro.core.files import REPO_ROOT
from offload_repro.plan.configuration import config_table, readme_with_config_table
from offload_repro.plan.inputs import edit_table, readme_with_table
from offload_repro.plan.layout import layout_block, readme_with_layout

path = REPO_ROOT / "README.md"
if sys.argv[1:] == ["--write"]:
    path.write_text(readme_with_layout(readme_with_config_table(readme_with_table(path.read_text()))))
else:
    print(edit_table(), config_table(), layout_block(), sep="\n\n")
