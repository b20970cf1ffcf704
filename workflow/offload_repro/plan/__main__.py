"""`python -m offload_repro.plan [--write]`: print the README's edit table, or write it there."""

import sys

from offload_repro.core.files import REPO_ROOT
from offload_repro.plan.inputs import edit_table, readme_with_table

path = REPO_ROOT / "README.md"
if sys.argv[1:] == ["--write"]:
    path.write_text(readme_with_table(path.read_text()))
else:
    print(edit_table())
