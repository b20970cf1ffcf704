"""XLA's GPU kernel cache, shared by every compile for one target.

Most of an XLA:GPU compile here is code generation (LLVM, then ptxas for each kernel): about half
of a DeepSeek-V3 compile on 2 cores, none of which any evidence reads. XLA can keep the kernels it
generated in a file (`--xla_gpu_kernel_cache_file`) and reuse those whose fused computation has
the same fingerprint, so the grid's rows and the frontier's micro batches of one model, which share
most of their kernels, generate each only once.

It is a cache of machine code only: buffer assignment, and so the memory analysis, and the
optimized HLO are decided before code generation, and `workflow/scripts/kernel_cache_identity.py`
compiles rows with and without it to show both byte-identical.

XLA rewrites the file it was given after each compile, not atomically, so two compiles never
share one: each gets a private copy of the shared file (`checkout`), and afterwards the kernels
it added are merged back under a lock (`publish`). The file is a `CompilationCacheProto`, a map
from kernel name to entry; only that map is read here, its entries are passed through as bytes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from offload_repro.core.files import write_atomically

FLAG = "--xla_gpu_kernel_cache_file"


def shared_path(programs: Path, description: str, versions: dict[str, Any]) -> Path:
    """The target's shared kernel file, named by what its kernels were generated for: kernels of
    another GPU description or another XLA are never offered."""
    digest = hashlib.sha256(json.dumps([description, versions], sort_keys=True).encode()).hexdigest()[:12]
    return programs / f"xla-kernels-{digest}.bin"


@cache
def _cache_message() -> Any:
    """A message class for the file's one field, `map<string, bytes> entries = 1` (XLA's entry
    messages are kept as their serialized bytes)."""
    file = descriptor_pb2.FileDescriptorProto(name="offload_repro_kernel_cache.proto", package="offload_repro")
    message = file.message_type.add(name="KernelCache")
    entry = message.nested_type.add(name="EntriesEntry")
    entry.options.map_entry = True
    scalar = descriptor_pb2.FieldDescriptorProto
    entry.field.add(name="key", number=1, type=scalar.TYPE_STRING, label=scalar.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=scalar.TYPE_BYTES, label=scalar.LABEL_OPTIONAL)
    message.field.add(
        name="entries",
        number=1,
        type=scalar.TYPE_MESSAGE,
        label=scalar.LABEL_REPEATED,
        type_name=".offload_repro.KernelCache.EntriesEntry",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("offload_repro.KernelCache"))


def read_entries(path: Path) -> dict[str, bytes] | None:
    """The file's entries by kernel name; {} when there is no file, None when it can't be parsed."""
    if not path.exists():
        return {}
    parsed = _cache_message()()
    try:
        parsed.ParseFromString(path.read_bytes())
    except DecodeError:
        return None
    return dict(parsed.entries)


def serialize(entries: dict[str, bytes]) -> bytes:
    message = _cache_message()()
    message.entries.update(entries)
    return message.SerializeToString(deterministic=True)


def checkout(shared: Path, private: Path) -> str:
    """Copy the shared file (a consistent one: it is only ever replaced whole) to `private`, for one
    compile; the XLA flag that points the compile at it."""
    private.unlink(missing_ok=True)
    if shared.exists():
        shutil.copyfile(shared, private)
    return f"{FLAG}={private}"


def publish(private: Path, shared: Path) -> int | None:
    """Merge the kernels of a finished compile's private file into the shared one, under a lock
    (a kernel another compile published meanwhile is kept); the private file is removed. Returns
    the number of kernels in the shared file, or None when the private file could not be read (the
    shared file is left as it was, as it is when the compile wrote none)."""
    entries = read_entries(private) if private.exists() else None
    private.unlink(missing_ok=True)
    if entries is None:
        return None
    shared.parent.mkdir(parents=True, exist_ok=True)
    with open(shared.with_name(shared.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        merged = read_entries(shared) or {}  # an unreadable shared file is replaced
        merged.update(entries)
        write_atomically(shared, serialize(merged))
    return len(merged)
