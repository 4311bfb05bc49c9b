"""Command-line interface: thin Typer commands over :mod:`kb_indexer.api`."""

from __future__ import annotations

from kb_indexer.cli.app import app  # commands are built on demand: see kb_indexer.cli.registry


def main() -> None:
    app()


__all__ = ["app", "main"]
