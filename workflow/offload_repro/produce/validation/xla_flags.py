"""Which XLA flags this build's XLA knows: asked of XLA itself, which names every flag of XLA_FLAGS
it does not know at once and stops ("Unknown flags in XLA_FLAGS: ..."). A published run's flag
that a later XLA removed is dropped from its compile and recorded, never silently."""

from __future__ import annotations

import re
import subprocess
import sys

from offload_repro.core.process import package_environment

UNKNOWN = re.compile(r"Unknown flags? in XLA_FLAGS: (.*)")
# XLA parses XLA_FLAGS when its first client starts; the CPU client parses the GPU flags too.
PROBE = "import jax; jax.devices()"


def unknown_flags(flags: list[str], python: str = sys.executable) -> list[str]:
    """The flags of `flags` this XLA does not know (a start of XLA in a process of its own, under a second)."""
    if not flags:
        return []
    env = package_environment({"XLA_FLAGS": " ".join(flags), "JAX_PLATFORMS": "cpu"})
    done = subprocess.run([python, "-c", PROBE], env=env, capture_output=True, text=True)
    found = UNKNOWN.search(done.stdout + done.stderr)  # the unknown flags, as written in XLA_FLAGS
    unknown = found.group(1).split() if found else []
    if done.returncode != 0 and not unknown:
        raise RuntimeError(f"XLA could not start to check its flags: {(done.stdout + done.stderr)[-2000:]}")
    return unknown
