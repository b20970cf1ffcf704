"""Bytes of every saved or offloaded activation, per row."""

from __future__ import annotations

import argparse

from offload_repro.commands import arguments
from offload_repro.core.data import load_rows
from offload_repro.produce.analytic_bytes import write_accounting

PARENTS = (arguments.TABLES, arguments.OUT)


def run(args: argparse.Namespace) -> int:
    write_accounting(load_rows(args.tables), args.out)
    return 0
