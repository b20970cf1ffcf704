"""XLA's GPU kernel cache, kept per compiled row so that compiling it again reuses its kernels.

Code generation (LLVM, then an assembler for each kernel) is a large part of a DeepSeek-V3
compile on 2 cores, and no evidence reads its output. XLA can keep the kernels it generated in a
file (`--xla_gpu_kernel_cache_file`) and reuse those whose fused computation has the same
fingerprint. A program is compiled again when code that decides the program key changes (an edit
of `produce/compiled/aot_compile.py`, say), and then it is mostly the same program: with the kernels of its last
compile, code generation dropped from 15 to 18 s to under 1 s (measured with the real ptxas; with
the stand-in of produce/compiled/assembler.py there is less to save). Distinct rows, micro batches and
targets share few kernels (the kernel's buffers are part of its fingerprint), so one file per row
and target is kept, not one shared file that every compile would have to read, merge and rewrite.

It is a cache of machine code only: buffer assignment, and so the memory analysis, and the
optimized HLO are decided before code generation. `workflow/scripts/kernel_cache_identity.py`
compiles rows with and without it to show both byte-identical.

XLA rewrites the file it is given, not atomically: each compile works on a private copy
(`checkout`), which replaces the kept file only after the compile succeeded (`publish`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from offload_repro.core.files import write_atomically

FLAG = "--xla_gpu_kernel_cache_file"


def kept_path(programs: Path, compiled_as: str, description: str, versions: dict[str, Any], machine_code: bool) -> Path:
    """Where the kernels of a row's (or a frontier point's) last compile for a target are kept,
    named by what they were generated for: kernels of another GPU description or another XLA, or
    assembled into machine code where these were not (produce/compiled/assembler.py), are never offered."""
    generated_for = [description, versions, machine_code]
    digest = hashlib.sha256(json.dumps(generated_for, sort_keys=True).encode()).hexdigest()[:12]
    return programs / "kernels" / f"{compiled_as}.{digest}.bin"


def checkout(kept: Path, private: Path) -> str:
    """Copy the kept file (it is only ever replaced whole) to `private` for one compile; the XLA
    flag that points the compile at it."""
    private.unlink(missing_ok=True)
    if kept.exists():
        shutil.copyfile(kept, private)
    return f"{FLAG}={private}"


def publish(private: Path, kept: Path) -> bool:
    """After a successful compile: its private file (the kernels it loaded and generated) replaces
    the kept one; the private file is removed. False when the compile wrote none."""
    if not private.exists():
        return False
    write_atomically(kept, private.read_bytes())
    private.unlink()
    return True
