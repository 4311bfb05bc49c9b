"""Semantic search on PostgreSQL: with pgvector the server answers the top documents from an HNSW index per
model (no matrix is read into the process), ranking as the numpy path does; without the right to create the
extension the index says so once and semantic search still works (the numpy path)."""

from __future__ import annotations

import json
import random

import pytest

from kb_indexer.api import KnowledgeBase, QueryOptions
from kb_indexer.llm.config import EmbedOptions
from tests.helpers import write_doc

EMBED = EmbedOptions(backend="fake-embed", model="fake-embed-256")
WORDS = [f"{a}{b}" for a in ("alpha", "bravo", "delta", "gamma", "kilo", "lima", "oscar", "sierra")
         for b in ("ton", "ville", "berg", "port", "field", "wood", "stone", "bridge", "lake", "hill")]
N_DOCS = 300


def _collection(root) -> list[str]:
    """N_DOCS documents of 5..40 words from an 80-word vocabulary (seeded), and 20 questions."""
    rng = random.Random(29)
    for i in range(N_DOCS):
        write_doc(root, f"d{i:03d}.md", f"# Doc {i}\n\n" + " ".join(rng.choices(WORDS, k=rng.randint(5, 40))) + "\n")
    return [" ".join(rng.choices(WORDS, k=3)) for _ in range(20)]


def _top(kb, question: str, k: int = 10) -> list[str]:
    out = kb.query(question, options=QueryOptions(method="semantic", limit=k))
    assert out["semantic"]["used"], out["semantic"]
    return [r["filepath"] for r in out["results"]]


def _kb(target, root):
    kb, _ = KnowledgeBase.init(target, root)
    assert kb.sync()["errors"] == []
    assert kb.embeddings.embed(embed=EMBED)["embedded"] == N_DOCS
    return kb


@pytest.fixture
def collection(tmp_path):
    root = tmp_path / "knowledge-base"
    root.mkdir()
    return root, _collection(root)


def test_pgvector_answers_from_an_hnsw_index_and_ranks_as_numpy(collection, pg_url, tmp_path):
    from kb_indexer.store import vectors as store
    from kb_indexer.store.pg import vectors as pg

    root, questions = collection
    on_pg = _kb(pg_url, root)
    on_sqlite = _kb(tmp_path / "kbindex.db", root)
    try:
        assert on_pg.db_stats()["vector_search"]["engine"] == "pgvector"
        assert on_sqlite.db_stats()["vector_search"]["engine"] == "numpy"
        model = store.latest_model(on_pg.conn)
        plan = "\n".join(r[0] for r in on_pg.conn.raw.execute(
            "EXPLAIN " + pg.nearest_sql(model.id, model.dim),
            (pg.literal([0.0] * model.dim),) * 2 + (40, 10)).fetchall())
        assert pg.index_name(model.id) in plan, plan
        overlap = []
        for q in questions:
            top_pg, top_sqlite = _top(on_pg, q), _top(on_sqlite, q)
            overlap.append(len(set(top_pg) & set(top_sqlite)) / max(len(top_sqlite), 1))
        assert sum(overlap) / len(overlap) >= 0.9, overlap
        # the server's cosines are the numpy path's (300 chunks: ef_search covers them all, so exact)
        import numpy as np

        vec = np.random.default_rng(1).standard_normal(model.dim).astype(np.float32)
        vec /= np.linalg.norm(vec)
        served, counts = store.nearest(on_pg.conn, model, vec, 100)
        assert counts == {"chunks": N_DOCS, "documents": N_DOCS}
        doc_ids, matrix, _ = store.load_matrix(on_sqlite.conn, store.latest_model(on_sqlite.conn))
        exact = dict(zip(doc_ids.tolist(), (matrix @ vec).tolist()))
        best = sorted(exact.items(), key=lambda kv: -kv[1])[:100]
        assert set(served) == {d for d, _ in best}
        assert all(abs(served[d] - s) < 1e-5 for d, s in best)
        # nothing was packed on the server: the query never read the matrix
        assert on_pg.conn.execute("SELECT count(*) FROM embedding_matrix").fetchone()[0] == 0
    finally:
        on_pg.close()
        on_sqlite.close()


@pytest.fixture
def unprivileged_url(pg_server):
    """A fresh database owned by a role that may not create the (untrusted) vector extension."""
    import uuid

    import psycopg

    from tests.conftest import _database_url

    name, role = f"kb_{uuid.uuid4().hex[:12]}", f"kbu_{uuid.uuid4().hex[:8]}"
    admin = pg_server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{role}"')
    url = _database_url(admin, name)
    head, _, query = url.partition("?")
    scheme, _, rest = head.partition("://")
    yield f"{scheme}://{role}@{rest.split('@', 1)[-1]}?{query}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_without_the_right_to_create_pgvector_it_says_so_once_and_searches_with_numpy(
        unprivileged_url, tmp_path, cli):
    root = tmp_path / "knowledge-base"
    root.mkdir()
    for i, text in enumerate(["engines of the automobile", "roses need water", "bread dough and yeast"]):
        write_doc(root, f"d{i}.md", f"# D{i}\n\n{text}\n")
    init = cli("init", "--db", unprivileged_url, "--kb", root, "--format", "json")
    assert init.exit_code == 0, init.stderr
    assert init.stderr.count("pgvector") == 1, init.stderr
    assert cli("sync", "--db", unprivileged_url, "--format", "json").exit_code == 0
    embed = cli("embed", "--db", unprivileged_url, "--embed-backend", "fake-embed", "--format", "json")
    assert embed.exit_code == 0, embed.stderr
    stats = cli("db-stats", "--db", unprivileged_url, "--format", "json")
    assert stats.exit_code == 0 and "pgvector" not in stats.stderr
    found = json.loads(stats.stdout)["vector_search"]
    assert found["engine"] == "numpy" and "permission denied" in found["note"], found
    out = cli("query", "car", "--db", unprivileged_url, "--method", "semantic", "--format", "json")
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["semantic"]["used"] and result["results"][0]["filepath"].endswith("d0.md")
    doctor = cli("doctor", "--db", unprivileged_url, "--llm-backend", "none", "--format", "json")
    assert json.loads(doctor.stdout)["database"]["vector_search"]["engine"] == "numpy"


def test_an_index_upgraded_to_pgvector_searches_the_vectors_it_already_had(collection, pg_url):
    """An index whose vectors were stored before m003_pgvector (simulated: the column, the index, the
    migration's record and meta removed) gets them copied into pgvector when it is opened again."""
    from kb_indexer.store import vectors as store
    from kb_indexer.store.pg import vectors as pg

    root, questions = collection
    kb = _kb(pg_url, root)
    before = {q: _top(kb, q) for q in questions[:5]}
    model = store.latest_model(kb.conn)
    kb.conn.raw.execute(f"DROP INDEX {pg.index_name(model.id)}; ALTER TABLE embedding_chunks DROP COLUMN vec; "
                        "DELETE FROM _migrations WHERE name = 'm003_pgvector'; DELETE FROM meta WHERE key = 'pgvector'")
    kb.close()
    kb = KnowledgeBase.open(pg_url)
    try:
        assert kb.conn.execute("SELECT count(*) FROM embedding_chunks WHERE vec IS NULL").fetchone()[0] == 0
        assert kb.conn.raw.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s",
                                   (pg.index_name(model.id),)).fetchone() is not None
        assert {q: _top(kb, q) for q in before} == before
    finally:
        kb.close()


def test_pgvector_installed_after_init_is_used_from_the_next_embed(unprivileged_url, pg_server, tmp_path, cli):
    """The index was made where the role could not create pgvector; the server's administrator creates the
    extension in that database later: the next `embed` (even with nothing new to embed) copies the stored
    vectors into pgvector and semantic search is answered by the server from then on."""
    import psycopg

    from kb_indexer.store import vectors as store
    from kb_indexer.store.pg import vectors as pg
    from tests.conftest import _database_url

    root = tmp_path / "knowledge-base"
    root.mkdir()
    for i, text in enumerate(["engines of the automobile", "roses need water", "bread dough and yeast"]):
        write_doc(root, f"d{i}.md", f"# D{i}\n\n{text}\n")
    assert cli("init", "--db", unprivileged_url, "--kb", root, "--format", "json").exit_code == 0
    assert cli("sync", "--db", unprivileged_url, "--format", "json").exit_code == 0
    embed = ("embed", "--db", unprivileged_url, "--embed-backend", "fake-embed", "--format", "json")
    assert json.loads(cli(*embed).stdout)["embedded"] == 3

    def vector_search() -> dict:
        return json.loads(cli("db-stats", "--db", unprivileged_url, "--format", "json").stdout)["vector_search"]

    assert vector_search()["engine"] == "numpy"
    database = unprivileged_url.partition("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(_database_url(pg_server.get_uri(), database), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")

    again = cli(*embed)
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["embedded"] == 0
    found = vector_search()
    assert found["engine"] == "pgvector" and found["pgvector"], found
    out = json.loads(cli("query", "car", "--db", unprivileged_url, "--method", "semantic", "--format", "json").stdout)
    assert out["semantic"]["used"] and out["results"][0]["filepath"].endswith("d0.md")
    write_doc(root, "d3.md", "# D3\n\nthe automobile engine and its car\n")
    assert cli("sync", "--db", unprivileged_url, "--format", "json").exit_code == 0
    assert json.loads(cli(*embed).stdout)["embedded"] == 1
    kb = KnowledgeBase.open(unprivileged_url)
    try:
        model = store.latest_model(kb.conn)
        assert kb.conn.execute("SELECT count(*), count(vec) FROM embedding_chunks").fetchone() == (4, 4)
        assert kb.conn.raw.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s",
                                   (pg.index_name(model.id),)).fetchone() is not None
        import numpy as np

        vec = np.ones(model.dim, dtype=np.float32) / np.sqrt(model.dim)
        served = store.nearest(kb.conn, model, vec, 10)
        assert served is not None and served[1] == {"chunks": 4, "documents": 4} and len(served[0]) == 4
    finally:
        kb.close()
