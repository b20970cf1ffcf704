"""Does a compile that assembles no machine code give the same program? And how much cheaper is it?

`PYTHONPATH=workflow python workflow/scripts/machine_code_identity.py [ROW ...] [--target gb200-nvl72]`
compiles each row for the target as the workflow does (`program_cache.compile_program`,
the compile-only flags) twice: with the real ptxas and with the stand-in of
`produce/compiled/assembler.py`. It prints whether the memory analysis, the optimized HLO's digest, the HLO
summary (host buffers, copies) and XLA's memory warnings are byte-identical, and each compile's
wall and CPU seconds (CPU: the compile process and the ptxas processes it ran). The two compiles
of a row run one after the other, each alone, so that their times are comparable.
"""

from __future__ import annotations

from identity import comparison, same, same_program

from offload_repro.produce.compiled.program_cache import compile_program


def main() -> None:
    target, rows, scratch = comparison(__doc__, "machine-code-identity-")
    print(f"target {target.name}; s = inside the compile process")
    print(
        "| row | memory | HLO sha256 | HLO summary | memory warnings"
        " | wall s, ptxas | wall s, stand-in | CPU s, ptxas | CPU s, stand-in |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        real = compile_program(row, target, scratch / "ptxas" / row.id, "k", machine_code=True)
        stand_in = compile_program(row, target, scratch / "stand-in" / row.id, "k")
        if real["status"] != "ok" or stand_in["status"] != "ok":
            print(f"| {row.id} | error: {real['message'] or stand_in['message']} |", flush=True)
            continue
        a, b = real["stats"], stand_in["stats"]
        print(
            f"| {row.id} | {same_program(a, b)} | {same(real['memory_warnings'], stand_in['memory_warnings'])}"
            f" | {a['compile_seconds']:.1f} | {b['compile_seconds']:.1f}"
            f" | {a['cpu_seconds']:.1f} | {b['cpu_seconds']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
