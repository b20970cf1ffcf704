"""`python -m offload_repro.plan [--write]`: print the README's generated tables (what an edit
rebuilds; the configuration), or write them there."""

import sys

from offload_repro.core.files import REPO_ROOT
from offload_repro.plan.configuration import config_table, readme_with_config_table
from offload_repro.plan.inputs import edit_table, readme_with_table

path = REPO_ROOT / "README.md"
if sys.argv[1:] == ["--write"]:
    path.write_text(readme_with_config_table(readme_with_table(path.read_text())))
else:
    print(edit_table(), config_table(), sep="\n\n")
