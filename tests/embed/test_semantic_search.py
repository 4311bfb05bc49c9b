"""Embeddings in the index and semantic/hybrid queries, with the deterministic fake-embed backend
(tests/fake_llm.py: bag of words hashed into buckets, where car/automobile/vehicle share one)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb_indexer.llm.config import EmbedOptions
from tests.helpers import write_doc
from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines

REPO = Path(__file__).resolve().parents[2]
FAKE = EmbedOptions(backend="fake-embed")

DOCS = {
    "engines.md": "# Automobile engines\n\nPistons, crankshafts and fuel injection in the automobile.\n",
    "gardens.md": "# Gardens\n\nRoses and tulips need water, sun and good soil.\n",
    "bakery.md": "# Bread baking\n\nFlour, yeast and water make a dough; the oven does the rest.\n",
    "trains.md": "# Railways\n\nLocomotives pull freight along steel rails.\n",
}


@pytest.fixture
def corpus(small):
    kb, root = small
    for name, text in DOCS.items():
        write_doc(root, name, text)
    assert kb.sync()["errors"] == []
    return kb, root


def paths(out):
    return [r["filepath"] for r in out["results"]]


def test_embed_is_incremental_and_follows_changes(corpus):
    kb, root = corpus
    first = kb.embeddings.embed(embed=FAKE)
    assert (first["embedded"], first["unchanged"], first["model"], first["dim"]) == (4, 0, "fake-embed-64", 64)
    assert first["coverage"]["with_vectors"] == 4 and first["coverage"]["coverage"] == 1.0
    again = kb.embeddings.embed()                                  # the index's model by default
    assert (again["embedded"], again["unchanged"], again["requests"]) == (0, 4, 0)
    write_doc(root, "gardens.md", "# Gardens\n\nRoses now, and an automobile parked in the garden.\n")
    write_doc(root, "new.md", "# New\n\nA new document about vehicles.\n")
    (root / "trains.md").unlink()
    kb.sync()
    cov = kb.db_stats()["embeddings"][0]
    assert (cov["documents"], cov["with_vectors"], cov["stale"], cov["without_vectors"]) == (4, 3, 1, 1)
    third = kb.embeddings.embed()
    assert (third["embedded"], third["unchanged"]) == (2, 2)
    assert kb.embeddings.embed(everything=True)["embedded"] == 4


def test_a_new_model_embeds_everything_and_models_never_mix(corpus):
    kb, _ = corpus
    kb.embeddings.embed(embed=FAKE)
    other = kb.embeddings.embed(embed=EmbedOptions(backend="fake-embed", model="fake-embed-16"))
    assert (other["embedded"], other["dim"]) == (4, 16)
    stats = {(m["model"], m["dim"], m["with_vectors"]) for m in kb.db_stats()["embeddings"]}
    assert stats == {("fake-embed-64", 64, 4), ("fake-embed-16", 16, 4)}
    # the newest model answers queries by default; naming the other uses its vectors only
    assert kb.query("car", options=QueryOptions(method="semantic"))["semantic"]["model"] == "fake-embed-16"
    out = kb.query("car", options=QueryOptions(method="semantic"),
                   embed=EmbedOptions(backend="fake-embed", model="fake-embed-64"))
    assert out["semantic"]["model"] == "fake-embed-64" and out["semantic"]["chunks"] == 4


def test_another_dimension_for_a_stored_model_is_refused(corpus):
    from kb_indexer.store import transaction
    from kb_indexer.store.vectors import MixedModelError, ensure_model

    kb, _ = corpus
    kb.embeddings.embed(embed=FAKE)
    with pytest.raises(MixedModelError, match="64-dimensional"):
        with transaction(kb.conn):
            ensure_model(kb.conn, "fake-embed", "fake-embed-64", 32)


def test_semantic_finds_what_shares_no_word_with_the_question(corpus):
    kb, _ = corpus
    assert paths(kb.query("car", options=QueryOptions(method="fulltext"))) == []
    kb.embeddings.embed(embed=FAKE)
    out = kb.query("car", options=QueryOptions(method="semantic"))
    assert out["query"]["method"] == "semantic" and out["query"]["fallback"] is None
    top = out["results"][0]
    assert top["filepath"] == "engines.md" and "semantic" in top["sources"]
    assert 0.0 <= top["similarity"] <= 1.0 and top["similarity"] > out["results"][1]["similarity"]
    assert out["semantic"]["used"] and out["semantic"]["documents_without_vectors"] == 0
    # the design's source: neither tags nor full text found it; the counts cover every result shown
    assert top["source"] == "semantic_search" and "vector search only" in top["reasoning"]
    assert out["semantic_search_count"] == sum(r["source"] == "semantic_search" for r in out["results"]) >= 1
    assert out["keyword_search_count"] + out["grep_search_count"] + out["semantic_search_count"] == out["count"]


def test_hybrid_fuses_full_text_and_vectors(corpus):
    kb, _ = corpus
    kb.embeddings.embed(embed=FAKE)
    out = kb.query("water for the dough", options=QueryOptions(method="hybrid", explain=True))
    assert paths(out)[0] == "bakery.md"
    top = out["results"][0]
    assert {"fulltext", "semantic"} <= set(top["sources"])
    parts = top["score_parts"]
    assert parts["dense"] == 1.0 and set(parts["weights"]) == {"keyword", "fulltext", "dense"}
    # a document found by vectors only still gets a place, below the one both channels found
    lone = kb.query("vehicle water", options=QueryOptions(method="hybrid"))
    assert set(paths(lone)[:2]) == {"engines.md", "gardens.md"} or paths(lone)[0] in ("gardens.md", "bakery.md")


def test_without_vectors_semantic_and_hybrid_run_lexically(corpus):
    kb, _ = corpus
    for method in ("semantic", "hybrid"):
        out = kb.query("water", options=QueryOptions(method=method))
        q = out["query"]
        assert q["method"] == "hybrid" and q["method_requested"] == method and q["fallback"] == "lexical"
        assert "run `kbindex embed`" in out["semantic"]["error"] and "without vectors" in q["method_reason"]
        assert set(paths(out)) == {"gardens.md", "bakery.md"}
    assert "semantic" not in kb.query("water", options=QueryOptions(method="fulltext"))


def test_an_unreachable_backend_falls_back_to_lexical(corpus, tmp_path, monkeypatch):
    kb, _ = corpus
    kb.embeddings.embed(embed=FAKE)
    script = tmp_path / "embed.json"
    script.write_text(json.dumps({"fail_after": 0, "error": "unavailable"}))
    monkeypatch.setenv("KBINDEX_FAKE_EMBED", str(script))
    out = kb.query("a question never asked before", options=QueryOptions(method="semantic"))
    assert out["query"]["fallback"] == "lexical" and "fake embedder down" in out["semantic"]["error"]


def test_documents_without_vectors_are_reported(corpus):
    kb, root = corpus
    kb.embeddings.embed(embed=FAKE)
    write_doc(root, "late.md", "# Late\n\nAn automobile document added after embedding.\n")
    kb.sync()
    out = kb.query("automobile", options=QueryOptions(method="hybrid"))
    assert out["semantic"]["documents_without_vectors"] == 1 and out["semantic"]["files_without_vectors"] == ["late.md"]
    assert "late.md" in paths(out)                   # still found by full text


def test_deleting_a_document_keeps_the_packed_vectors_consistent(corpus):
    kb, root = corpus
    kb.embeddings.embed(embed=FAKE)
    assert paths(kb.query("car", options=QueryOptions(method="semantic")))[0] == "engines.md"
    (root / "engines.md").unlink()
    kb.sync()
    out = kb.query("car", options=QueryOptions(method="semantic"))
    assert "engines.md" not in paths(out) and out["semantic"]["chunks"] == 3


def test_long_documents_are_chunked_and_the_best_chunk_scores(small):
    kb, root = small
    filler = "\n\n".join(f"Paragraph {i} about gardens, roses, tulips and soil." * 5 for i in range(20))
    write_doc(root, "long.md", f"# Long\n\n{filler}\n\n## Engines\n\nThe automobile engine section.\n")
    write_doc(root, "short.md", "# Short\n\nTulips.\n")
    kb.sync()
    res = kb.embeddings.embed(embed=FAKE)
    assert res["chunks"] > 5
    assert paths(kb.query("car", options=QueryOptions(method="semantic")))[0] == "long.md"


# -- the command line ---------------------------------------------------------------------------

def kbindex(*args, env=None, **kw):
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kb_indexer", *map(str, args)], capture_output=True, text=True,
                          env=full, timeout=120, **kw)


def test_cli_embed_query_and_warnings(corpus):
    kb, _ = corpus
    db = kb.db_path
    res = kbindex("query", "car", "--method", "semantic", "--db", db, "--format", "json")
    assert res.returncode == 0 and json.loads(res.stdout)["query"]["fallback"] == "lexical"
    assert "semantic search without vectors" in res.stderr
    res = kbindex("embed", "--embed-backend", "fake-embed", "--db", db, "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["embedded"] == 4 and "Embedding: 4/4 documents" in res.stderr
    res = kbindex("query", "car", "--method", "semantic", "--db", db, "--format", "json")
    out = json.loads(res.stdout)
    assert res.returncode == 0 and out["results"][0]["filepath"] == "engines.md" and res.stderr == ""
    res = kbindex("query", "car", "--method", "sqlite", "--db", db, "--format", "json")
    assert json.loads(res.stdout)["query"]["method"] == "keyword"
    res = kbindex("sync", "--embed", "--db", db, "--format", "json")
    assert json.loads(res.stdout)["embed"]["unchanged"] == 4


def test_cli_embed_with_an_unreachable_backend_is_an_error_and_sync_a_warning(corpus, tmp_path):
    kb, _ = corpus
    script = tmp_path / "down.json"
    script.write_text(json.dumps({"fail_after": 0}))
    env = {"KBINDEX_FAKE_EMBED": str(script), "KBINDEX_LLM_RETRIES": "0"}
    res = kbindex("embed", "--embed-backend", "fake-embed", "--db", kb.db_path, "--format", "json", env=env)
    assert res.returncode == 1 and json.loads(res.stderr)["error"]["code"] == "llm_unavailable", res.stderr
    res = kbindex("sync", "--embed", "--embed-backend", "fake-embed", "--db", kb.db_path, "--format", "json", env=env)
    assert res.returncode == 0 and json.loads(res.stdout)["embed"]["code"] == "llm_unavailable"
    assert "embedding failed" in res.stderr


def test_embed_resumes_after_a_kill(small, tmp_path):
    kb, root = small
    for i in range(12):
        write_doc(root, f"d{i:02}.md", f"# Doc {i}\n\nText number {i} about automobiles.\n")
    kb.sync()
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"delay": 0.3}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "KBINDEX_FAKE_EMBED": str(script)}
    proc = subprocess.Popen([sys.executable, "-m", "kb_indexer", "embed", "--embed-backend", "fake-embed",
                             "--batch", "1", "--db", str(kb.db_path)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    calls = Path(str(script) + ".calls.jsonl")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not calls.exists() or len(calls.read_text().splitlines()) < 4):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    done = kb.conn.execute("SELECT count(*) FROM embedding_docs").fetchone()[0]
    assert 2 <= done < 12
    script.write_text(json.dumps({}))
    rest = kb.embeddings.embed(embed=FAKE)
    assert rest["embedded"] == 12 - done and rest["unchanged"] == done
    assert kb.db_stats()["embeddings"][0]["with_vectors"] == 12


def test_requests_are_full_across_documents(small, tmp_path, monkeypatch):
    """Chunks of several documents share a request: only the last request of a run is partial."""
    kb, root = small
    para = "Pistons and crankshafts turn fuel into motion in every automobile engine. " * 14
    for i in range(5):   # three chunks each (about 1,000 characters a chunk)
        write_doc(root, f"doc{i}.md", f"# Engines {i}\n\n" + "\n\n".join([para] * 3) + "\n")
    write_doc(root, "empty.md", "")
    kb.sync()
    script = tmp_path / "embed.json"
    script.write_text("{}")
    monkeypatch.setenv("KBINDEX_FAKE_EMBED", str(script))
    out = kb.embeddings.embed(embed=FAKE, batch=4)
    sizes = [len(json.loads(line)) for line in Path(str(script) + ".calls.jsonl").read_text().splitlines()]
    chunks = kb.conn.execute("SELECT count(*) FROM embedding_chunks").fetchone()[0]
    assert sum(sizes) == chunks and chunks >= 10
    assert all(n == 4 for n in sizes[:-1]) and 1 <= sizes[-1] <= 4, sizes
    assert out["requests"] == len(sizes) == -(-chunks // 4) and out["chunks"] == chunks
    assert out["embedded"] == 6   # the empty document too: it has no chunk to embed, and is done
    assert kb.query("automobile engine", options=QueryOptions(method="semantic"), embed=FAKE)["semantic"]["used"]
