"""Bytes of every saved or offloaded activation, per row."""

from __future__ import annotations

import argparse

from offload_repro.commands import arguments
from offload_repro.produce.analytic_bytes import write_accounting

PARENTS = (arguments.TABLES, arguments.OUT, arguments.CHOSEN)


def run(args: argparse.Namespace) -> int:
    write_accounting(arguments.rows(args), args.out)
    return 0
