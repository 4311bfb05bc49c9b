"""Command-line interface: thin Typer commands over :mod:`kb_indexer.api`."""

from __future__ import annotations

import os
import sys

from kb_indexer.cli import interrupted   # first: nothing in it takes time to import

# Importing Typer and the app takes a tenth of a second or more on a loaded machine: Ctrl-C meanwhile ends the
# run as it does later (no traceback, exit 130), whichever entry point imports this (the `kbindex` script,
# kbindex.py, python -m kb_indexer).
try:
    from kb_indexer.cli.app import app  # commands are built on demand: see kb_indexer.cli.registry
except KeyboardInterrupt:
    sys.exit(interrupted.report())


def main() -> None:
    # numpy's OpenBLAS starts a thread per core when numpy is imported (a cold `query` on a large knowledge
    # base imports it for the sparse index): ~60 ms of a 50k-document cold query on 2 cores, for arrays that
    # one thread handles. A value set in the environment is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        app()
    except KeyboardInterrupt:   # before KbGroup.main takes over (Typer building the command line)
        sys.exit(interrupted.report())


__all__ = ["app", "main"]
