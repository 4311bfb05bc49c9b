"""An MCP client asking for a path outside the knowledge base (`../x.md`, an absolute path elsewhere, a kb://
resource climbing out) is refused with `outside the knowledge-base root`, naming only the path it sent: never the
server's absolute knowledge-base root (the client, maybe on another machine behind the token, has no business
knowing the server's folders; its paths are relative to the root anyway). Nor does any other error a client is shown,
such as a busy index's, name the index file's folder (`The index kbindex.db is busy`). The command line still names
the root and the index."""

from __future__ import annotations

import sqlite3

import anyio
import pytest

from tests.mcp_http_server import TOKEN, client, served


def _refusals(url: str, asked: list[str]) -> list[str]:
    async def main() -> list[str]:
        out = []
        with anyio.fail_after(120):
            async with client(url, TOKEN) as session:
                for path in asked:
                    result = await session.call_tool("kb_get", {"path": path})
                    assert result.is_error, result
                    out.append(result.content[0].text)
                try:
                    await session.read_resource("kb://../secret.md")
                except Exception as exc:   # the SDK raises the server's error for a resource
                    out.append(str(exc))
        return out
    return anyio.run(main)


def test_a_path_outside_the_knowledge_base_is_refused_without_naming_the_root(kb, run):
    root = kb.kb_root
    secret = root.parent / "secret.md"
    secret.write_text("# Secret\n\nNot in the knowledge base.\n", encoding="utf-8")
    asked = ["../secret.md", str(secret), str(root.parent / "not-there" / "x.md")]
    with served(kb.db_path, env={"KBINDEX_MCP_TOKEN": TOKEN}) as server:
        said = _refusals(server.url, asked)
    assert len(said) == len(asked) + 1
    for path, text in zip(asked, said):
        assert "outside the knowledge-base root" in text and path in text, text
    for text in said:
        assert str(root) not in text and str(root.resolve()) not in text, text
    cli = run("show", "../secret.md", "--db", kb.db_path, "-f", "json", cwd=root)
    assert cli.returncode == 1 and str(root.resolve()) in cli.stderr   # the local user is told which root


@pytest.mark.sqlite_only("a SQLite index's write lock, held by another connection")
def test_an_error_of_the_index_is_told_without_the_servers_folders(kb, monkeypatch):
    qid = kb.query("reward shaping")["query_id"]
    holder = sqlite3.connect(kb.db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")   # another process's write lock, held past the busy timeout
    try:
        with served(kb.db_path, env={"KBINDEX_MCP_TOKEN": TOKEN, "KBINDEX_BUSY_TIMEOUT": "0.5"}) as server:
            async def main() -> str:
                with anyio.fail_after(120):
                    async with client(server.url, TOKEN) as session:
                        result = await session.call_tool("kb_feedback", {"query_id": qid,
                                                                         "helpful": ["reward-shaping.md"]})
                        assert result.is_error, result
                        return str(result.content[0].text)
            said = anyio.run(main)
    finally:
        holder.close()
    assert "is busy" in said and "kbindex.db" in said, said
    for folder in (kb.db_path.parent, kb.kb_root):
        assert str(folder) not in said and str(folder.resolve()) not in said, said
