"""A tool's cursor continues only the call that returned it: a `kb_query` cursor passed with another
question (or edited to name another query id) is refused, so no feedback is recorded against the wrong
query; malformed cursors (`²³`, 5,000 digits, negative, garbage) are clean tool errors on every paged tool
and the server goes on; `kbindex mcp --port` outside 1-65535 is bad usage (exit 2), a port in use an error."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from kb_indexer.api import KnowledgeBase  # noqa: E402
from kb_indexer.errors import UsageError  # noqa: E402
from tests.conftest import REPO, kbindex_exe  # noqa: E402
from tests.mcp_client import data, session  # noqa: E402

QUESTION = "reinforcement learning reward"
BAD = ["²³", "9" * 5000, "-1", "-1.1.00", "Zm9vYmFy==", "3:7", "0.0.zz", "\x00", "1" * 19 + ".." + "0" * 32]


def _first_page(db, monkeypatch):
    from kb_indexer.mcp import paging
    from kb_indexer.mcp.server import kb_query_impl

    monkeypatch.setattr(paging, "BUDGET", 400)
    first = kb_query_impl(db, QUESTION, None, "auto", 10, None, None)
    assert first["next_cursor"] and isinstance(first["query_id"], int)
    return first


def test_a_query_cursor_is_refused_with_another_question(kb, monkeypatch):
    from kb_indexer.mcp.server import kb_query_impl

    first = _first_page(kb.db_path, monkeypatch)
    cursor = first["next_cursor"]
    for question, limit, method in (("markov decision process", 10, "auto"), (QUESTION, 5, "auto"),
                                    (QUESTION, 10, "fulltext")):
        with pytest.raises(UsageError, match="Invalid cursor"):
            kb_query_impl(kb.db_path, question, None, method, limit, None, cursor)
    offset, tag, mac = cursor.split(".")
    with KnowledgeBase.open(kb.db_path) as other_kb:
        other = other_kb.query("markov decision process")["query_id"]
    with pytest.raises(UsageError, match="Invalid cursor"):     # another query's id in an edited cursor
        kb_query_impl(kb.db_path, QUESTION, None, "auto", 10, None, f"{offset}.{other}.{mac}")
    second = kb_query_impl(kb.db_path, QUESTION, None, "auto", 10, None, cursor)
    assert second["query_id"] == first["query_id"] and second["results"]


def test_malformed_cursors_are_tool_errors_on_every_paged_tool(kb):
    calls = [("kb_query", {"question": QUESTION}), ("kb_get", {"path": "markov-decision-processes.md"}),
             ("kb_similar", {"keyword": "reinforcement learning"}), ("skills_match", {"message": "edit a pdf"})]

    async def body(s):
        out = []
        for name, args in calls:
            for cursor in BAD:
                out.append((name, cursor, await s.call_tool(name, {**args, "cursor": cursor})))
        after = await s.call_tool("kb_query", {"question": QUESTION})
        return out, after
    out, after = session(kb.db_path, body)
    for name, cursor, result in out:
        text = result.content[0].text
        assert result.is_error, (name, cursor[:20], text[:200])
        assert "Invalid cursor" in text and "internal" not in text.lower() and "Traceback" not in text
    assert data(after)["results"]


@pytest.mark.parametrize("port", ["-1", "0", "65536", "99999999999999999999"])
def test_a_port_out_of_range_is_bad_usage(kb, port):
    proc = subprocess.run([*kbindex_exe(), "mcp", "--db", str(kb.db_path), "--transport", "http", "--port", port],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2, proc.stderr[-500:]
    assert "--port" in proc.stderr and "1<=x<=65535" in proc.stderr and "bug" not in proc.stderr
    assert proc.stdout == ""


def test_a_port_in_use_is_an_error_not_a_crash(kb):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([*kbindex_exe(), "mcp", "--db", str(kb.db_path), "--transport", "http",
                               "--port", str(port)], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 1, proc.stderr[-500:]
    assert f"could not start on 127.0.0.1:{port}" in proc.stderr and "bug" not in proc.stderr
