"""The PTX assembler of a compile-only GPU: a stand-in that writes no machine code.

XLA's last step for a GPU is ptxas, once per kernel (about 500 for a DeepSeek-V3 step, 47 more
while it picks GEMM tilings). A compile-only GPU never loads those kernels, and nothing the
evidence reads depends on them: buffer assignment (so the memory analysis), the optimized HLO and
its schedule are all decided before ptxas runs. On 2 cores ptxas costs about a third of a
compile's CPU time, so compile-only programs are compiled with a stand-in: a shell script named
ptxas, in a directory XLA is pointed at (`--xla_gpu_cuda_data_dir`), that answers `--version`
with the real ptxas (the PTX that XLA emits depends on that version) and writes an empty image
for each kernel. XLA finds everything else of CUDA (libdevice) where it did before.

`workflow/scripts/identity.py machine-code` compiles every row both ways: the memory analysis,
the optimized HLO's digest and its summary are byte-identical. A slow test compiles two rows with
the real ptxas and XLA's default autotuning against the main job's programs.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

FLAG = "--xla_gpu_cuda_data_dir"
STAND_IN_DIR = "assembler"  # in a compile's work directory
# Where XLA looks for ptxas when no directory is given: the usual CUDA root, then PATH.
CUDA_ROOT_PTXAS = Path("/usr/local/cuda/bin/ptxas")

SCRIPT = """#!/bin/sh
# ptxas for a compile-only GPU (offload_repro.produce.compiled.assembler): XLA's kernels are never loaded,
# so each is assembled into an empty image. The version is the real ptxas's.
if [ "$1" = --version ]; then exec {real} --version; fi
while [ $# -gt 0 ]; do
    if [ "$1" = -o ]; then : > "$2"; exit 0; fi
    shift
done
echo "ptxas stand-in: no -o OUTPUT among its arguments" >&2
exit 2
"""


def real_ptxas() -> Path | None:
    """The ptxas XLA would run, or None where there is none (XLA then says so itself)."""
    if CUDA_ROOT_PTXAS.exists():
        return CUDA_ROOT_PTXAS
    found = shutil.which("ptxas")
    return Path(found) if found else None


def stand_in(work_dir: Path) -> str | None:
    """Write the stand-in under `work_dir`; the XLA flag that makes a compile use it, or None when
    no real ptxas answers for its version (the compile then runs as XLA would without one)."""
    real = real_ptxas()
    if real is None:
        return None
    root = work_dir.resolve() / STAND_IN_DIR
    (root / "bin").mkdir(parents=True, exist_ok=True)
    script = root / "bin" / "ptxas"
    script.write_text(SCRIPT.format(real=shlex.quote(str(real))), encoding="utf-8")
    script.chmod(0o755)
    return f"{FLAG}={root}"
