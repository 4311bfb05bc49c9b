"""Full-text retrieval on PostgreSQL: the engine's own bm25 beside SQLite's FTS5 and ts_rank.

    python bench/pg_fulltext.py [--docs 5000] [--questions 300] [--seed 2929] [--runs 3] [--json]

Starts its own PostgreSQL (the ``pgserver`` wheel: PostgreSQL 16) and, on each collection, indexes the same
documents three ways in the same run and asks the same questions of each:

* ``sqlite``: the SQLite engine's full-text path (FTS5 ``bm25()``, :func:`kb_indexer.search.fulltext.search`);
* ``postgres``: the PostgreSQL engine's (:mod:`kb_indexer.store.pg.fulltext`: FTS5's tokens and bm25 from its
  own postings), through the same function;
* ``ts_rank``: PostgreSQL's own full-text search, ``ts_rank`` over ``to_tsvector('english')`` with the title
  weighted A and the body D, GIN-indexed, the question as an OR of its lexemes (what
  PostgreSQL ranks without kbindex's postings).

Collections: Cranfield (``../shared/data/cranfield``) and a held-out synthetic one built here and used for
nothing else: topical documents of very different lengths (a Zipf background shared by all, each topic's
own words, a few words only one document has), and questions written from one document's words (with some
background words) whose answer is that document. Questions are the search pipeline's content terms
(:func:`kb_indexer.search.terms.content_terms`). Prints nDCG@10, query latency p50/p95 (best of ``--runs``
passes; the full-text search call with its snippets, PostgreSQL's remembered scores dropped before each so
every ask is a first one; ts_rank: its SQL statement) and index build seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import cranfield  # noqa: E402

BATCH = 2000   # rows per write transaction


def PgConn(raw: Any) -> Any:
    """The engine's own connection (kb_indexer.store.pg.connection.PgConnection) over ``raw``."""
    from kb_indexer.config import DbUrl
    from kb_indexer.store.pg.connection import PgConnection

    return PgConnection(raw, DbUrl(raw.info.dsn))


# -- the held-out synthetic collection ------------------------------------------------------------------


def _zipf_words(rng: random.Random, n: int, prefix: str) -> list[str]:
    cons, vows = "bcdfghjklmnprstvwz", "aeiou"
    out: set[str] = set()
    while len(out) < n:
        out.add(prefix + "".join(rng.choice(cons) + rng.choice(vows) for _ in range(rng.randint(2, 4))))
    return sorted(out)


def synthetic(docs: int, questions: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                               dict[str, dict[str, int]]]:
    """(corpus, queries, qrels) in Cranfield's shape; each question's answer is the document it came from."""
    rng = random.Random(seed)
    background = _zipf_words(rng, 3000, "")
    bg_weights = [1.0 / (i + 1) for i in range(len(background))]
    topics = [_zipf_words(rng, 120, "") for _ in range(max(10, docs // 50))]
    topic_weights = [1.0 / (i + 1) ** 0.7 for i in range(120)]
    corpus, sources = [], []
    for i in range(docs):
        topic = rng.randrange(len(topics))
        length = int(min(4000, max(20, rng.lognormvariate(5.3, 0.9))))
        own = _zipf_words(rng, 3, f"x{i}")
        n_topic = int(length * rng.uniform(0.15, 0.4))
        words = (rng.choices(background, bg_weights, k=length - n_topic)
                 + rng.choices(topics[topic], topic_weights, k=n_topic) + rng.choices(own, k=max(1, length // 200)))
        rng.shuffle(words)
        title = " ".join(rng.choices(topics[topic], topic_weights, k=rng.randint(2, 5)))
        corpus.append({"_id": f"s{i}", "title": title, "text": " ".join(words)})
        sources.append((title.split() + words))
    queries, qrels = [], {}
    for q in range(questions):
        target = rng.randrange(docs)
        words = rng.sample(sources[target], min(len(sources[target]), rng.randint(3, 7)))
        words += rng.choices(background, bg_weights, k=rng.randint(0, 2))
        queries.append({"_id": f"q{q}", "text": " ".join(words)})
        qrels[f"q{q}"] = {f"s{target}": 2}
    return corpus, queries, qrels


# -- indexing ------------------------------------------------------------------------------------------


def _rows(corpus: list[dict[str, Any]]) -> list[tuple[int, str, str, str, str]]:
    return [(i + 1, " ".join(d.get("title", "").split()), "", "", d.get("text", "")) for i, d in enumerate(corpus)]


def index_sqlite(corpus: list[dict[str, Any]], folder: Path) -> tuple[Any, float]:
    from kb_indexer.store import fulltext
    from kb_indexer.store.connection import connect, transaction
    from kb_indexer.store.migrations import migrate

    conn = connect(folder / "kbindex.db", create=True)
    migrate(conn)
    rows = _rows(corpus)
    with transaction(conn):
        conn.executemany("INSERT INTO documents (id, filepath) VALUES (?, ?)", [(r[0], f"{r[0]}.md") for r in rows])
    t0 = time.perf_counter()
    for start in range(0, len(rows), BATCH):
        with transaction(conn):
            fulltext.write_rows(conn, rows[start:start + BATCH])
    return conn, time.perf_counter() - t0


def _database(uri: str) -> Any:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(uri, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return psycopg.connect(psycopg.conninfo.make_conninfo(uri, dbname=name), autocommit=True)


def index_postgres(corpus: list[dict[str, Any]], uri: str) -> tuple[Any, float]:
    from kb_indexer.store import fulltext
    from kb_indexer.store.pg.fulltext import create_schema

    raw = _database(uri)
    raw.execute("CREATE TABLE documents (id BIGINT PRIMARY KEY, filepath TEXT NOT NULL)")
    create_schema(raw)
    rows = _rows(corpus)
    with raw.cursor().copy("COPY documents (id, filepath) FROM STDIN") as copy:
        for r in rows:
            copy.write_row((r[0], f"{r[0]}.md"))
    conn = PgConn(raw)
    t0 = time.perf_counter()
    for start in range(0, len(rows), BATCH):
        with raw.transaction():
            fulltext.write_rows(conn, rows[start:start + BATCH])
    raw.execute("ANALYZE")
    return conn, time.perf_counter() - t0


def index_ts_rank(corpus: list[dict[str, Any]], uri: str) -> tuple[Any, float]:
    raw = _database(uri)
    raw.execute("CREATE TABLE docs (id BIGINT PRIMARY KEY, title TEXT, body TEXT, tsv tsvector)")
    rows = _rows(corpus)
    t0 = time.perf_counter()
    with raw.transaction():
        with raw.cursor().copy("COPY docs (id, title, body) FROM STDIN") as copy:
            for r in rows:
                copy.write_row((r[0], r[1], r[4].replace("\x00", " ")))
        raw.execute("UPDATE docs SET tsv = setweight(to_tsvector('english', title), 'A') || "
                    "setweight(to_tsvector('english', body), 'D')")
        raw.execute("CREATE INDEX docs_tsv ON docs USING gin (tsv)")
    raw.execute("ANALYZE docs")
    return raw, time.perf_counter() - t0


# -- asking --------------------------------------------------------------------------------------------

TS_SQL = ("WITH q AS (SELECT replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery AS q) "
          "SELECT id FROM docs, q WHERE q.q::text <> '' AND tsv @@ q.q ORDER BY ts_rank(tsv, q.q) DESC, id LIMIT 10")


def _terms(text: str) -> list[str]:
    from kb_indexer.search.terms import content_terms, parse_text

    return content_terms(parse_text(text).words)


def bm25_top10(conn: Any) -> Callable[[list[str]], list[int]]:
    from kb_indexer.search import fulltext
    from kb_indexer.store.pg.fulltext import forget

    def ask(terms: list[str]) -> list[int]:
        forget()   # PostgreSQL remembers a question's scores until the next write: time a first ask
        rows = fulltext.search(conn, fulltext.build_query(terms), 10)
        return [d for d, _, _ in sorted(rows, key=lambda r: (-r[1], r[0]))[:10]]
    return ask


def ts_top10(raw: Any) -> Callable[[list[str]], list[int]]:
    def ask(terms: list[str]) -> list[int]:
        return [r[0] for r in raw.execute(TS_SQL, (" ".join(terms),)).fetchall()]
    return ask


def run(ask: Callable[[list[str]], list[int]], questions: list[list[str]],
        runs: int) -> tuple[list[list[int]], list[float]]:
    """Each question's top 10 and its latency (ms, the best of ``runs`` passes)."""
    best = [math.inf] * len(questions)
    ranked: list[list[int]] = []
    for _ in range(runs):
        ranked = []
        for i, terms in enumerate(questions):
            t0 = time.perf_counter()
            ranked.append(ask(terms))
            best[i] = min(best[i], (time.perf_counter() - t0) * 1000)
    return ranked, best


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def evaluate(name: str, corpus: list[dict[str, Any]], queries: list[dict[str, Any]],
             qrels: dict[str, dict[str, int]], uri: str, runs: int) -> dict[str, Any]:
    ids = [d["_id"] for d in corpus]
    questions = [_terms(q["text"]) for q in queries]
    out: dict[str, Any] = {"collection": name, "documents": len(corpus), "questions": len(queries)}
    with tempfile.TemporaryDirectory() as tmp:
        lite, lite_s = index_sqlite(corpus, Path(tmp))
        pgc, pg_s = index_postgres(corpus, uri)
        ts, ts_s = index_ts_rank(corpus, uri)
        engines = {"sqlite": (bm25_top10(lite), lite_s), "postgres": (bm25_top10(pgc), pg_s),
                   "ts_rank": (ts_top10(ts), ts_s)}
        tops = {}
        for engine, (ask, build) in engines.items():
            ranked, ms = run(ask, questions, runs)
            tops[engine] = ranked
            ndcg = statistics.fmean(cranfield.ndcg_at([ids[d - 1] for d in r], qrels[q["_id"]])
                                    for r, q in zip(ranked, queries))
            out[engine] = {"ndcg10": round(ndcg, 4), "p50_ms": round(_pct(ms, 0.5), 2),
                           "p95_ms": round(_pct(ms, 0.95), 2), "build_s": round(build, 2)}
        out["same_top10"] = sum(a == b for a, b in zip(tops["sqlite"], tops["postgres"])) / len(queries)
        out["max_rel_score_diff"] = _score_agreement(lite, pgc, questions)
        out["phrases"] = _phrases(lite, pgc, questions, runs)
        lite.close()
        pgc.raw.close()
        ts.close()
    return out


def _score_agreement(lite: Any, pgc: Any, questions: list[list[str]]) -> float:
    """The largest relative difference between the two engines' bm25 of any matching document."""
    from kb_indexer.search import fulltext

    worst = 0.0
    for terms in questions:
        q = fulltext.build_query(terms)
        a, b = fulltext.all_scores(lite, q), fulltext.all_scores(pgc, q)
        if set(a) != set(b):
            return math.inf
        worst = max([worst] + [abs(b[d] - s) / max(abs(s), 1e-12) for d, s in a.items()])
    return worst


def _phrases(lite: Any, pgc: Any, questions: list[list[str]], runs: int) -> dict[str, Any]:
    """The same questions with their first two words as one phrase (as a known keyword is asked): latency
    on both engines, and whether they agree."""
    phrased = [[" ".join(t[:2])] + t[2:] if len(t) >= 2 else t for t in questions]
    out: dict[str, Any] = {}
    tops = {}
    for engine, conn in (("sqlite", lite), ("postgres", pgc)):
        tops[engine], ms = run(bm25_top10(conn), phrased, runs)
        out[engine] = {"p50_ms": round(_pct(ms, 0.5), 2), "p95_ms": round(_pct(ms, 0.95), 2)}
    out["same_top10"] = sum(a == b for a, b in zip(tops["sqlite"], tops["postgres"])) / len(phrased)
    out["max_rel_score_diff"] = _score_agreement(lite, pgc, phrased)
    return out


def _print(results: list[dict[str, Any]]) -> None:
    print(f"{'collection':<22}{'engine':<10}{'nDCG@10':>9}{'x sqlite':>9}{'p50 ms':>9}{'p95 ms':>9}{'build s':>9}")
    for res in results:
        base = res["sqlite"]["ndcg10"]
        for engine in ("sqlite", "postgres", "ts_rank"):
            r = res[engine]
            label = f"{res['collection']} ({res['documents']})"
            print(f"{label:<22}{engine:<10}{r['ndcg10']:>9.4f}{r['ndcg10'] / base:>9.3f}{r['p50_ms']:>9.2f}"
                  f"{r['p95_ms']:>9.2f}{r['build_s']:>9.2f}")
        print(f"{'':<22}postgres vs sqlite: same top 10 for {res['same_top10']:.1%} of questions, "
              f"largest relative bm25 difference {res['max_rel_score_diff']:.2e}")
        ph = res["phrases"]
        print(f"{'':<22}first two words as a phrase: p50/p95 ms sqlite {ph['sqlite']['p50_ms']:.2f}/"
              f"{ph['sqlite']['p95_ms']:.2f}, postgres {ph['postgres']['p50_ms']:.2f}/{ph['postgres']['p95_ms']:.2f}; "
              f"same top 10 {ph['same_top10']:.1%}, largest bm25 difference {ph['max_rel_score_diff']:.2e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=5000, help="documents of the synthetic collection")
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--seed", type=int, default=2929)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import pgserver

    with tempfile.TemporaryDirectory() as pgdata:
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
        try:
            results = [evaluate("cranfield", *cranfield.load(), server.get_uri(), args.runs),
                       evaluate("synthetic", *synthetic(args.docs, args.questions, args.seed),
                                server.get_uri(), args.runs)]
        finally:
            server.cleanup()
    print(json.dumps(results, indent=1) if args.json else "", end="\n" if args.json else "")
    if not args.json:
        _print(results)


if __name__ == "__main__":
    main()
