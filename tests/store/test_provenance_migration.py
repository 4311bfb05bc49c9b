"""m050_provenance: indexes written before it upgrade in place, the old origin strings become columns."""

from __future__ import annotations

import pytest

from kb_indexer.store.migrations import MIGRATIONS


def _old_index(tmp_path, monkeypatch, names):
    from kb_indexer.store import migrations, opening

    monkeypatch.setattr(migrations, "MIGRATIONS", [m for m in MIGRATIONS if m[0] in names])
    kbdir = tmp_path / "knowledge-base"
    kbdir.mkdir()
    conn, _ = opening.init_db(tmp_path / "kbindex.db", kbdir)
    conn.executemany("INSERT INTO keywords (id, keyword, display) VALUES (?, ?, ?)",
                     [(i, k, k) for i, k in enumerate(["a", "b", "c", "d"], 1)])
    conn.executemany("INSERT INTO keyword_similarities (id, keyword_id_1, keyword_id_2, similarity_type, context, "
                     "score, origin) VALUES (?, ?, ?, 'synonym', 'x', 0.5, ?)",
                     [(1, 1, 2, "file:similarities.json"), (2, 1, 3, "manual"), (3, 3, 4, "learned"),
                      (4, 2, 4, "import")])
    conn.execute("INSERT INTO learned_items (id, key, kind, status, detail, feedback_ids, similarity_id) "
                 "VALUES (7, 'similarity:c|d', 'similarity', 'active', '{}', '[3, 5]', 3)")
    # A learned relation deleted (by `unrelate`) before this migration: learn must not restore it.
    conn.execute("INSERT INTO learned_items (id, key, kind, status, detail, feedback_ids, similarity_id, weight) "
                 "VALUES (8, 'similarity:a|d', 'similarity', 'active', "
                 "'{\"keyword1\": \"a\", \"keyword2\": \"d\", \"type\": \"related_concept\"}', '[4]', NULL, 0.6)")
    conn.commit()
    conn.close()
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS)
    return tmp_path / "kbindex.db"


@pytest.mark.parametrize("until", ["m040_similarity_files", "m060_sync_state"])
def test_old_origin_strings_become_columns(tmp_path, monkeypatch, until):
    from kb_indexer.store.opening import open_db

    all_names = [m[0] for m in MIGRATIONS]
    names = set(all_names[:all_names.index(until) + 1]) - {"m050_provenance"}
    conn = open_db(_old_index(tmp_path, monkeypatch, names))
    rows = {r[0]: tuple(r[1:]) for r in conn.execute(
        "SELECT id, origin_kind, origin_file, learned_id FROM keyword_similarities")}
    assert rows == {1: ("file", "similarities.json", None), 2: ("person", None, None), 3: ("learned", None, 7),
                    4: ("import", None, None)}
    assert sorted(tuple(r) for r in conn.execute("SELECT learned_id, feedback_id FROM learned_feedback")) == [(7, 3), (7, 5), (8, 4)]
    assert conn.execute("SELECT status FROM learned_items WHERE id = 8").fetchone()[0] == "removed"
    assert "m050_provenance" in [r[0] for r in conn.execute("SELECT name FROM _migrations")]
    conn.close()


def test_migrations_are_in_order():
    names = [m[0] for m in MIGRATIONS]
    assert names.index("m040_similarity_files") < names.index("m050_provenance") < names.index("m060_sync_state")


def test_export_and_import_keep_provenance_and_tombstones(kb):
    kb.unrelate("RL", "reinforcement learning")
    dump = kb.export()
    assert dump["tables"]["similarity_tombstones"]
    assert {r["origin_kind"] for r in dump["tables"]["keyword_similarities"]} == {"file"}
    kb.import_(dump, force=True)
    assert kb.export() == dump
    # An export from before m050 (only the origin strings) is filled in on import.
    for r in dump["tables"]["keyword_similarities"]:
        del r["origin_kind"], r["origin_file"], r["learned_id"]
    kb.import_(dump, force=True)
    kinds = {r[0] for r in kb.conn.execute("SELECT origin_kind FROM keyword_similarities")}
    assert kinds == {"file"}
    kb.sync()
    assert not [s for s in kb.similar("RL")["similar_keywords"] if s["keyword"].lower() == "reinforcement learning"]
