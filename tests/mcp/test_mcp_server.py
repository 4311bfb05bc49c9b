"""`kbindex mcp`: a real MCP client from the SDK, over stdio, against a `kbindex mcp` subprocess running this
checkout: the tool catalog (names, schemas, size), each tool, a feedback round trip that `learn` uses,
paging with a cursor, bad arguments as tool errors, skill and document resources, and a clean stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from kb_indexer.api import QueryOptions

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from kb_indexer.api import KnowledgeBase  # noqa: E402
from kb_indexer.tokens import estimate_tokens  # noqa: E402
from tests.conftest import REPO, kbindex_exe  # noqa: E402
from tests.helpers import write_skills  # noqa: E402
from tests.mcp_client import data as _data  # noqa: E402
from tests.mcp_client import session as _session  # noqa: E402

TOOLS = {"kb_query", "kb_get", "kb_similar", "kb_feedback", "skills_match"}


def _project(db):
    """The folder holding the knowledge base (beside the index file on SQLite; any engine)."""
    with KnowledgeBase.open(db) as kb:
        return kb.kb_root.parent


@pytest.fixture
def db(kb):
    write_skills(kb.kb_root.parent / "skills", {
        "pdf-tools": ("Extract text and tables from PDF files", "Use pdftotext."),
        "git-helper": "Write commit messages and resolve git merge conflicts",
    })
    assert kb.skills.sync([str(kb.kb_root.parent / "skills")])["errors"] == []
    return kb.db_path


def test_tool_catalog_is_small_and_typed(db):
    async def body(s):
        return (await s.list_tools()).tools
    tools = _session(db, body)
    assert {t.name for t in tools} == TOOLS
    # As on the wire: pydantic writes each JSON-RPC message in compact JSON (the raw tools/list line is
    # measured too, in test_stdout_holds_nothing_but_protocol).
    catalog = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
                         separators=(",", ":"), ensure_ascii=False)
    size = estimate_tokens(catalog)
    print(f"MCP tool catalog: {len(tools)} tools, {size} estimated tokens ({len(catalog)} characters)")
    assert size <= 1500
    by_name = {t.name: t for t in tools}
    assert by_name["kb_query"].input_schema["required"] == ["question"]
    assert set(by_name["kb_query"].input_schema["properties"]) >= {"question", "keywords", "method", "limit",
                                                                   "context"}
    assert by_name["kb_feedback"].input_schema["properties"]["query_id"]["type"] == "integer"
    assert by_name["kb_get"].annotations.read_only_hint is True
    assert by_name["kb_similar"].annotations.read_only_hint is True
    assert by_name["kb_query"].annotations.read_only_hint is False
    assert all(t.description and len(t.description) < 200 for t in tools)


def _string_titles(schema) -> list:
    if isinstance(schema, list):
        return [t for item in schema for t in _string_titles(item)]
    if not isinstance(schema, dict):
        return []
    own = [v for k, v in schema.items() if k == "title" and isinstance(v, str)]
    return own + [t for v in schema.values() for t in _string_titles(v)]


def test_every_tool_declares_the_shape_of_its_result(db):
    async def body(s):
        return (await s.list_tools()).tools
    by_name = {t.name: t.output_schema for t in _session(db, body)}
    assert set(by_name) == TOOLS
    for name, schema in by_name.items():
        assert schema["type"] == "object" and schema.get("additionalProperties") is not True, name
        assert "next_cursor" in schema["properties"] or name == "kb_feedback", name
        assert not _string_titles(schema), name  # annotations compacted away; a `title` property stays
    hit = by_name["kb_query"]["$defs"]["QueryHit"]["properties"]
    assert {"filepath", "title", "relevance_score", "snippet", "sources", "keyword_expansions"} <= set(hit)
    assert by_name["kb_query"]["properties"]["query_id"]["type"] == ["integer", "null"]
    assert by_name["kb_get"]["properties"]["total_chars"]["type"] == "integer"
    assert by_name["kb_feedback"]["required"] == ["query_id", "recorded"]
    assert set(by_name["skills_match"]["properties"]) >= {"matched", "loaded", "evicted"}


def test_the_text_copy_of_a_result_is_the_same_data_in_compact_json(db):
    async def body(s):
        return await s.call_tool("kb_query", {"question": "reinforcement learning", "limit": 3})
    result = _session(db, body)
    text = result.content[0].text
    assert json.loads(text) == result.structured_content
    assert "\n  " not in text and not text.startswith("{\n")


def test_each_tool_and_the_feedback_round_trip(db):
    async def body(s):
        q = _data(await s.call_tool("kb_query", {"question": "reinforcement learning reward", "limit": 5}))
        similar = _data(await s.call_tool("kb_similar", {"keyword": "reinforcement learning"}))
        doc = _data(await s.call_tool("kb_get", {"path": q["results"][0]["filepath"]}))
        skills = _data(await s.call_tool("skills_match", {"message": "extract the tables from this PDF file",
                                                          "session": "s1"}))
        fb = _data(await s.call_tool("kb_feedback", {"query_id": q["query_id"],
                                                     "helpful": [q["results"][0]["filepath"]],
                                                     "not_helpful": [q["results"][-1]["filepath"]]}))
        return q, similar, doc, skills, fb
    q, similar, doc, skills, fb = _session(db, body)
    assert isinstance(q["query_id"], int) and q["results"]
    top = q["results"][0]
    assert top["filepath"] and top["snippet"] and top["sources"] and "matched_keywords" in top
    assert estimate_tokens(json.dumps(q)) <= 2100
    assert similar["similar_keywords"] and "keyword" in similar["similar_keywords"][0]
    assert doc["text"] and doc["filepath"] == top["filepath"]
    assert [m["name"] for m in skills["matched"]] == ["pdf-tools"]
    assert fb == {"query_id": q["query_id"], "recorded": 2}
    assert skills["loaded"] == ["pdf-tools"] and skills["evicted"] == []
    with KnowledgeBase.open(db) as kb:
        shown = kb.learning.feedback_show(q["query_id"])
        assert {r["filepath"] for r in shown["feedback"]} >= {top["filepath"]}
        planned = kb.learning.learn(dry_run=True)  # `learn` uses the feedback given over MCP
    assert planned["feedback_analyzed"] == 2 and planned["queries"] == 1
    helped = [x for x in planned["suggestions"] if x["kind"] == "association" and x["filepath"] == top["filepath"]]
    assert helped and helped[0]["weight"] > 0


def test_kb_get_pages_a_long_document_with_a_cursor(db):
    from kb_indexer.store.documents import get_body, require_document

    section = "## Part {n}\n\nLong notes on reward shaping and policy gradients, part {n}. " + "Words " * 300 + "\n\n"
    long_doc = _project(db) / "knowledge-base" / "long-notes.md"
    long_doc.write_text("# Long Notes\n\n" + "".join(section.format(n=n) for n in range(12)), encoding="utf-8")
    with KnowledgeBase.open(db) as kb:
        kb.sync()
        body_text = get_body(kb.conn, require_document(kb.conn, "long-notes.md")["id"])
    longest = {"filepath": "long-notes.md"}

    async def body(s):
        pages, cursor = [], None
        while True:
            args = {"path": longest["filepath"], **({"cursor": cursor} if cursor else {})}
            page = _data(await s.call_tool("kb_get", args))
            pages.append(page)
            cursor = page["next_cursor"]
            if not cursor or len(pages) > 50:
                return pages
    pages = _session(db, body)
    assert len(pages) >= 2, f"{longest['filepath']} ({len(body_text)} chars) fits one page"
    assert "".join(p["text"] for p in pages) == body_text
    assert all(estimate_tokens(json.dumps(p)) <= 2100 for p in pages)


def test_bad_arguments_are_tool_errors_and_the_server_goes_on(db):
    async def body(s):
        unknown = await s.call_tool("kb_get", {"path": "no-such-document.md"})
        wrong_type = await s.call_tool("kb_feedback", {"query_id": "not a number"})
        bad_cursor = await s.call_tool("kb_get", {"path": "markov-decision-processes.md", "cursor": "zz"})
        no_query = await s.call_tool("kb_feedback", {"query_id": 999999, "helpful": ["x.md"]})
        after = await s.call_tool("kb_query", {"question": "markov decision process"})
        return unknown, wrong_type, bad_cursor, no_query, after
    unknown, wrong_type, bad_cursor, no_query, after = _session(db, body)
    for r in (unknown, wrong_type, bad_cursor, no_query):
        assert r.is_error
    assert "no-such-document.md" in unknown.content[0].text
    assert _data(after)["results"]


def test_skill_and_document_resources(db):
    async def body(s):
        listed = (await s.list_resources()).resources
        skill = await s.read_resource("skill://pdf-tools/SKILL.md")
        doc = await s.read_resource("kb://markov-decision-processes.md")
        return listed, skill, doc
    listed, skill, doc = _session(db, body)
    uris = {str(r.uri) for r in listed}
    assert {"skill://pdf-tools/SKILL.md", "skill://git-helper/SKILL.md"} <= uris
    assert "kb://markov-decision-processes.md" in uris
    assert "name: pdf-tools" in skill.contents[0].text and "pdftotext" in skill.contents[0].text
    assert "Markov" in doc.contents[0].text


def test_a_sync_by_another_process_is_seen_without_a_restart(db):
    async def body(s):
        before = {str(r.uri) for r in (await s.list_resources()).resources}
        write_skills(_project(db) / "skills", {"csv-tools": "Read and clean CSV spreadsheets"})
        with KnowledgeBase.open(db) as kb:
            kb.skills.sync()
        after = {str(r.uri) for r in (await s.list_resources()).resources}
        return before, after
    before, after = _session(db, body)
    assert "skill://csv-tools/SKILL.md" not in before and "skill://csv-tools/SKILL.md" in after


def _rpc(id_, method, params=None) -> bytes:
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return (json.dumps(msg) + "\n").encode()


def test_stdout_holds_nothing_but_protocol(db):
    exe = kbindex_exe()
    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}
    requests = b"".join([
        _rpc(1, "initialize", init),
        (json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n").encode(),
        _rpc(2, "tools/list"),
        _rpc(3, "tools/call", {"name": "kb_query", "arguments": {"question": "reward shaping"}}),
        _rpc(4, "tools/call", {"name": "kb_get", "arguments": {"path": "missing.md"}}),
        _rpc(5, "tools/call", {"name": "no_such_tool", "arguments": {}}),
        b"this is not json\n",
        _rpc(6, "resources/list"),
    ])
    proc = subprocess.Popen([*exe, "mcp", "--db", str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    killer = threading.Timer(120, proc.kill)
    killer.start()
    try:
        proc.stdin.write(requests)
        proc.stdin.flush()
        lines, answered = [], set()
        while not {1, 2, 3, 4, 5, 6} <= answered:  # the calls run in threads: wait for them before EOF
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            answered.add(json.loads(line).get("id"))
        proc.stdin.close()
        lines += proc.stdout.read().splitlines()
        proc.wait(timeout=30)
    finally:
        killer.cancel()
        proc.kill()
    messages = [json.loads(line) for line in lines]  # every byte of stdout is a JSON-RPC message
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    assert {1, 2, 3, 4, 5, 6} <= {m.get("id") for m in messages}, messages
    by_id = {m.get("id"): m for m in messages}
    catalog_line = next(line for line in lines if json.loads(line).get("id") == 2)
    print(f"tools/list response on the wire: {len(catalog_line)} bytes, "
          f"{estimate_tokens(catalog_line.decode())} estimated tokens")
    assert estimate_tokens(catalog_line.decode()) <= 1550  # the catalog (≤ 1,500) and the JSON-RPC envelope
    assert by_id[4]["result"]["isError"] is True
    assert by_id[3]["result"].get("isError") is not True


def test_without_the_sdk_it_says_how_to_install_it(tmp_path, db):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nclass _B:\n    def find_spec(self, name, *a):\n"
        "        if name == 'mcp' or name.startswith('mcp.'):\n            raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, _B())\n")
    proc = subprocess.run([sys.executable, "-m", "kb_indexer", "mcp", "--db", str(db)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": f"{blocker}{os.pathsep}{REPO}"})
    assert proc.returncode == 1
    assert "pip install 'kbindex[mcp]'" in proc.stderr
    assert proc.stdout == ""


def test_other_commands_do_not_import_the_sdk():
    probe = ("import sys\nfrom kb_indexer.cli import app\nfrom typer.testing import CliRunner\n"
             "CliRunner().invoke(app, sys.argv[1:])\n"
             "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n")
    for args in (["search", "--help"], ["query", "--help"], ["--help"], ["mcp", "--help"]):
        proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert proc.returncode == 0, proc.stderr
        assert "mcp" not in proc.stdout.split() and "mcp_types" not in proc.stdout.split(), args


def test_kb_query_pages_its_results_with_a_cursor(db, monkeypatch):
    """In process, with a small budget: the pages of a query are its results in order, one query_id."""
    from kb_indexer.mcp import paging
    from kb_indexer.mcp.server import kb_query_impl

    monkeypatch.setattr(paging, "BUDGET", 500)
    first = kb_query_impl(db, "reinforcement learning reward", None, "auto", 10, None, None)
    pages = [first]
    while pages[-1]["next_cursor"] and len(pages) < 20:
        pages.append(kb_query_impl(db, "reinforcement learning reward", None, "auto", 10, None,
                                   pages[-1]["next_cursor"]))
    assert len(pages) >= 2 and pages[-1]["next_cursor"] is None
    assert {p["query_id"] for p in pages} == {first["query_id"]}
    with KnowledgeBase.open(db) as kb:
        full = kb.query("reinforcement learning reward", options=QueryOptions(limit=10, record=False))
        assert kb.learning.history()["count"] == 1  # the continuations were not recorded
    assert [r["filepath"] for p in pages for r in p["results"]] == [r["filepath"] for r in full["results"]]


def test_the_http_transport_serves_the_same_tools(db):
    import socket
    import time

    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([*kbindex_exe(), "mcp", "--db", str(db), "--transport", "http", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 60
        while True:  # wait until the server listens (a poll, not a timing assertion)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "the http server did not start"
                time.sleep(0.1)

        async def main():
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    tools = (await session.list_tools()).tools
                    found = await session.call_tool("kb_query", {"question": "reinforcement learning", "limit": 2})
                    return tools, found
        tools, found = anyio.run(main)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert {t.name for t in tools} == TOOLS
    assert _data(found)["results"] and isinstance(_data(found)["query_id"], int)
    assert out == b""  # over http too, the server prints nothing on stdout


def test_a_deterministic_answer_says_it_is_the_fallback(db, monkeypatch):
    """No LLM backend configured: `kb_similar` with a user context, and `kb_query` with a context, answer
    with the lexical fit and say so in `fallback` (never passed off as an LLM's judgement)."""
    from kb_indexer.mcp.server import kb_query_impl, kb_similar_impl

    monkeypatch.setenv("KBINDEX_LLM_BACKEND", "none")
    similar = kb_similar_impl(db, "reinforcement learning", "training agents", None)
    found = kb_query_impl(db, "reinforcement learning", None, "auto", 3, "training agents", None)
    plain = kb_query_impl(db, "reinforcement learning", None, "auto", 3, None, None)
    assert similar["fallback"].startswith("lexical")
    assert found["fallback"].startswith("lexical") and found["results"]
    assert "fallback" not in plain  # no context asked for: nothing fell back
