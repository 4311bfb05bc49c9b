"""Every error code kbindex raises (a ``code="..."`` in the source, or an error class's ``code``) is in the error
table of docs/agents.md, which agents read to handle failures (``missing_extra``, ``rerank_failed`` and others
were raised but not listed; ``mcp`` said ``no_index`` where every other command says ``not_initialised``)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CODE = re.compile(r"""\bcode\s*=\s*["']([a-z_]+)["']""")


def _raised() -> set[str]:
    codes: set[str] = set()
    for path in (REPO / "kb_indexer").rglob("*.py"):
        codes |= set(CODE.findall(path.read_text(encoding="utf-8")))
    return codes - {"error"}   # KbError's own default, never raised as such


def test_the_error_table_lists_every_code():
    table = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
    missing = sorted(c for c in _raised() if f"`{c}`" not in table)
    assert missing == [], f"not in docs/agents.md's error table: {missing}"
    assert "no_index" not in _raised()
