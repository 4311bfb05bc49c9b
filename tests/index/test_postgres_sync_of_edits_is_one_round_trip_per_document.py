"""On PostgreSQL `sync` stores an edited document in one round trip (its row, its keyword rows and its keyword
text by its path, sent together) and finds a batch's keyword ids at once: three round trips per edited document
before. The rows are those of the document-by-document path (the sync tests, both engines)."""

from __future__ import annotations

import json

import pytest

from tests.libpq_trace import round_trips

pytestmark = pytest.mark.parametrize("index_engine", ["postgres"], indirect=True)


def _edit(project, names, line, new_keywords=()):
    for name in names:
        path = project / "knowledge-base" / name
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
        sidecar = path.with_suffix(".keywords.json")
        if new_keywords and sidecar.exists():
            data = json.loads(sidecar.read_text(encoding="utf-8"))
            data["keywords"] = list(new_keywords) + data["keywords"]
            sidecar.write_text(json.dumps(data), encoding="utf-8")


def test_each_edited_document_costs_at_most_one_more_round_trip(kb, project, tmp_path):
    names = sorted(p.name for p in (project / "knowledge-base").glob("*.md"))[:8]
    assert len(names) == 8
    _edit(project, names[:2], "A first edit.")
    few, trips_few, _ = round_trips(kb, tmp_path, kb.sync)
    _edit(project, names, "A second edit.", new_keywords=("zebra keyword", "aardvark keyword"))
    more, trips_more, _ = round_trips(kb, tmp_path, kb.sync)
    assert (few["updated"], more["updated"]) == (2, 8)
    assert trips_more - trips_few <= 6, (trips_few, trips_more)   # 6 more documents: one round trip each
    texts = dict(kb.conn.execute("SELECT d.filepath, t.body FROM documents d JOIN documents_text t "
                                 "ON t.document_id = d.id").fetchall())
    assert all("A second edit." in texts[n] for n in names)
    # new keywords made once each, in the order the first document storing them lists them, shared by all
    made = kb.conn.execute("SELECT keyword FROM keywords WHERE keyword LIKE '% keyword' ORDER BY id").fetchall()
    assert [r[0] for r in made] == ["zebra keyword", "aardvark keyword"]
    tagged = kb.conn.execute("SELECT count(DISTINCT dk.document_id) FROM document_keywords dk JOIN keywords k "
                             "ON k.id = dk.keyword_id WHERE k.keyword = 'zebra keyword'").fetchone()[0]
    assert tagged == sum(1 for n in names if (project / "knowledge-base" / n).with_suffix(".keywords.json").exists())
    shown = kb.conn.execute("SELECT t.keywords FROM documents d JOIN documents_text t ON t.document_id = d.id "
                            "WHERE d.filepath = ?", (names[0],)).fetchone()[0]
    assert shown == " ; ".join(r[0] for r in kb.conn.execute(
        "SELECT k.display FROM document_keywords dk JOIN keywords k ON k.id = dk.keyword_id JOIN documents d "
        "ON d.id = dk.document_id WHERE d.filepath = ? AND dk.source != 'generated' ORDER BY dk.id", (names[0],)))
