"""The feature sub-APIs (``kb.skills``, ``kb.context``, ``kb.learning``, ``kb.enrich``, ``kb.embeddings``)
raise documented errors like the facade: a write to an index that cannot be written is ``read_only``
naming the index, never a raw ``sqlite3`` error."""

from __future__ import annotations

import sqlite3

import pytest

from kb_indexer.errors import KbError

pytestmark = pytest.mark.both_engines

WRITES = {
    "skills.sync": lambda kb, tmp: kb.skills.sync([str(tmp)]),
    "context.add": lambda kb, tmp: kb.context.add("s1", role="user", text="hello"),
    "learning.clear_history": lambda kb, tmp: kb.learning.clear_history(all_=True),
    "enrich.documents": lambda kb, tmp: kb.enrich.documents(all_=True, use_llm=False, write=False),
    "embeddings.embed": lambda kb, tmp: kb.embeddings.embed(embed=_fake_embed()),
}


def _fake_embed():
    from kb_indexer.llm.config import EmbedOptions
    return EmbedOptions(backend="fake-embed")


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_sub_api_write_to_a_read_only_index_is_read_only(kb, tmp_path, name):
    skill = tmp_path / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: a demo skill\n---\nBody.\n")
    kb.query("reward")   # a history to clear (PostgreSQL refuses a write, not an empty read-only transaction)
    # every write now fails: SQLITE_READONLY, or PostgreSQL's read-only transaction (25006)
    kb.conn.execute("SET default_transaction_read_only = on" if getattr(kb.conn, "engine", "") == "postgres"
                    else "PRAGMA query_only = ON")
    with pytest.raises(KbError) as info:
        WRITES[name](kb, tmp_path / "skills")
    assert not isinstance(info.value, sqlite3.Error)
    assert info.value.code == "read_only" and str(kb.db_path) in info.value.message

