"""`resources/list` answers in pages of at most 100 with the SDK's cursor (every skill and document once,
over all pages), the two URI shapes are advertised as resource templates, a cursor not made by the server
is invalid params, and the index is read off the event loop: while the index is locked by another
process, a `ping` is answered before the `resources/list` that waits for the lock."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_types import INVALID_PARAMS, PaginatedRequestParams  # noqa: E402

from tests.conftest import REPO, kbindex_exe  # noqa: E402
from tests.helpers import write_skills  # noqa: E402
from tests.mcp_client import session  # noqa: E402

PAGE = 100


@pytest.fixture
def many(small, tmp_path):
    kb, kbdir = small
    for i in range(230):
        (kbdir / "notes" / f"n{i // 50}").mkdir(parents=True, exist_ok=True)
        (kbdir / "notes" / f"n{i // 50}" / f"note {i:03d}.md").write_text(f"# Note {i}\n\nText {i}.\n")
    assert kb.sync()["errors"] == []
    write_skills(tmp_path / "skills", {f"skill-{i}": f"Skill number {i}" for i in range(7)})
    assert kb.skills.sync([str(tmp_path / "skills")])["errors"] == []
    return kb.db_path


def test_every_resource_is_listed_once_in_bounded_pages(many):
    async def body(s):
        pages, cursor = [], None
        while len(pages) < 10:
            result = await s.list_resources(params=PaginatedRequestParams(cursor=cursor))
            pages.append([str(r.uri) for r in result.resources])
            cursor = result.next_cursor
            if not cursor:
                break
        templates = (await s.list_resource_templates()).resource_templates
        doc = await s.read_resource(pages[-1][-1])
        return pages, templates, doc
    pages, templates, doc = session(many, body)
    uris = [u for page in pages for u in page]
    assert len(pages) == 3 and all(len(p) <= PAGE for p in pages)
    assert len(uris) == len(set(uris)) == 238   # the report, 7 skills, 230 documents
    assert "kbindex://report" in uris
    assert {f"skill://skill-{i}/SKILL.md" for i in range(7)} <= set(uris)
    assert "kb://notes/n4/note%20229.md" in uris
    assert {t.uri_template for t in templates} == {"skill://{name}/SKILL.md", "kb://{+path}"}
    assert "Text" in doc.contents[0].text


@pytest.mark.parametrize("cursor", ["²³", "9" * 5000, "-1", "Zm9vYmFy==", "100", "100..", ""],
                         ids=["superscripts", "5000-digits", "negative", "base64", "bare-offset", "no-mac", "empty"])
def test_a_cursor_not_made_by_the_server_is_invalid_params(many, cursor):
    async def body(s):
        try:
            await s.list_resources(params=PaginatedRequestParams(cursor=cursor))
            error = None
        except MCPError as exc:
            error = exc.error
        after = await s.list_resources()
        return error, after
    error, after = session(many, body)
    if cursor == "":      # no cursor: the first page
        assert error is None
    else:
        assert error is not None and error.code == INVALID_PARAMS and "Invalid cursor" in error.message
    assert len(after.resources) == PAGE and after.next_cursor


def _rpc(id_, method, params=None) -> bytes:
    msg = {"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params is not None else {})}
    return (json.dumps(msg) + "\n").encode()


@pytest.mark.sqlite_only("SQLite's exclusive locking mode on the .db file")
def test_a_listing_waiting_for_a_locked_index_does_not_hold_up_other_requests(small):
    kb, kbdir = small
    (kbdir / "a.md").write_text("# A\n\nSome text.\n")
    kb.sync()
    kb.close()
    lock = sqlite3.connect(kb.db_path, isolation_level=None)
    lock.execute("PRAGMA locking_mode=EXCLUSIVE")   # no other connection can read until released
    lock.execute("BEGIN EXCLUSIVE")
    lock.execute("UPDATE meta SET value = value WHERE 0")
    proc = subprocess.Popen([*kbindex_exe(), "mcp", "--db", str(kb.db_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    killer = threading.Timer(120, proc.kill)
    killer.start()
    try:
        proc.stdin.write(_rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                "clientInfo": {"name": "test", "version": "0"}}))
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.stdin.write(_rpc(2, "resources/list", {}) + _rpc(3, "ping"))
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        lock.execute("ROLLBACK")
        lock.execute("PRAGMA locking_mode=NORMAL")
        lock.execute("SELECT 1 FROM meta").fetchall()   # the lock goes with the next read
        lock.close()
        second = json.loads(proc.stdout.readline())
    finally:
        killer.cancel()
        proc.kill()
        proc.wait()
    assert first["id"] == 3                            # the ping, while the listing waits in a thread
    assert second["id"] == 2 and [r["uri"] for r in second["result"]["resources"]][:2] == ["kbindex://report", "kb://a.md"]
