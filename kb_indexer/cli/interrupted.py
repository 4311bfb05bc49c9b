"""What Ctrl-C prints and the exit code it gives (128 + SIGINT, as a shell reports it), at any moment of a run:
while the modules import (:mod:`kb_indexer.cli`), while Typer builds the command line, or in a command
(:class:`kb_indexer.cli.app.KbGroup`). Imports nothing of kbindex, so it is loaded before anything that can take
long to import."""

from __future__ import annotations

import sys

EXIT_CODE = 130


def report() -> int:
    """Say that the run was interrupted (on stderr); the exit code to end with."""
    sys.stderr.write("Interrupted.\n")
    return EXIT_CODE
