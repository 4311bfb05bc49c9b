"""Command-line interface: thin Typer commands over :mod:`kb_indexer.api`."""

from __future__ import annotations

import os

from kb_indexer.cli.app import app  # commands are built on demand: see kb_indexer.cli.registry


def main() -> None:
    # numpy's OpenBLAS starts a thread per core when numpy is imported (a cold `query` on a large knowledge
    # base imports it for the sparse index): ~60 ms of a 50k-document cold query on 2 cores, for arrays that
    # one thread handles. A value set in the environment is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    app()


__all__ = ["app", "main"]
