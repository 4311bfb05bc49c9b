"""A git revision of this repository as a plain folder, for the benchmarks that measure it beside this checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def checkout(rev: str, work: Path) -> Path:
    """``git archive`` of ``rev`` unpacked into ``work/baseline`` (no .git, no build files); its path."""
    out = work / "baseline"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out
