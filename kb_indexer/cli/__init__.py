"""Command-line interface: thin Typer commands over :mod:`kb_indexer.api`."""

from __future__ import annotations

from kb_indexer.cli.app import app
from kb_indexer.cli import database, documents, keywords, learn, llm, query, search, similarity  # noqa: F401  (register commands)


def main() -> None:
    app()


__all__ = ["app", "main"]
