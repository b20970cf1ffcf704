"""The site-packages entries a TPU row needs: what MaxText's trainer and this package's run,
probe and launch code import, plus the few that are loaded only while training.

Run with the .venv's Python and PYTHONPATH=workflow as `closure.py SITE_PACKAGES OUT_FILE`; writes
one entry per line (a package folder, a module file or an extension), the form `pack.sh` copies.
To a file, not stdout: some of the imported libraries print there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Imported while a run trains, not at start: the tokenizer's codecs (tiktoken_ext), the
# checkpoint reader transformers reaches for (safetensors), and the TPU runtime itself.
LOADED_LATER = ("tiktoken_ext", "safetensors", "libtpu")

ENTRY_MODULES = (
    "maxtext.trainers.pre_train.train",
    # imported by the trainer only once it sets up its data (ml_collections comes with it)
    "maxtext.input_pipeline.input_pipeline_interface",
    "maxtext.trainers.pre_train.train_compile",
    "offload_repro.cli",
    "offload_repro.commands.run",
    "offload_repro.commands.probe",
    "offload_repro.produce.measured.launch",
    "offload_repro.produce.measured.runner",
    "offload_repro.produce.measured.host_link_probe",
)


def entries(site: Path) -> list[str]:
    import importlib

    for name in ENTRY_MODULES:
        importlib.import_module(name)
    found = set(LOADED_LATER)
    for module in list(sys.modules.values()):
        path = Path(getattr(module, "__file__", None) or "/")
        if path.is_relative_to(site):
            found.add(path.relative_to(site).parts[0])
    return sorted(found)


if __name__ == "__main__":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    site = Path(sys.argv[1]).resolve()
    Path(sys.argv[2]).write_text("\n".join(entries(site)) + "\n", encoding="utf-8")
