"""The Python API behind every CLI command (the CLI is a thin shell over this).

    from kb_indexer.api import KnowledgeBase
    with KnowledgeBase.open() as kb:
        print(kb.search(["reinforcement learning"]))

Every method returns plain JSON-ready data and raises ``KbError`` on bad input.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_indexer.config import default_kb_root, find_db, stored_root_form, stored_root_path
from kb_indexer.errors import KbError, NotFoundError, UsageError
from kb_indexer.limits import check_context, check_id, check_keyword, check_utf8
from kb_indexer.learn.api import LearningAPI
from kb_indexer.skills.api import SkillsAPI
from kb_indexer.context.api import ContextAPI
from kb_indexer.enrich.api import EnrichAPI
from kb_indexer.search.defaults import DEFAULT_CONTEXT_THRESHOLD, SEARCH_DEFAULT_LIMIT
from kb_indexer.search.options import QueryOptions
from kb_indexer.search.question import check_question
from kb_indexer.store import open_db, transaction
from kb_indexer.store.documents import KeywordIds, document_keywords, require_document
from kb_indexer.store.errors import from_sqlite, translating
from kb_indexer.store.migrations import init_db, schema_version
from kb_indexer.store.similarities import SIMILARITY_TYPES, neighbours, upsert_similarity
from kb_indexer.store.vectors import coverage as vector_coverage
from kb_indexer.text import normalize_keyword

if TYPE_CHECKING:
    from kb_indexer.results import QueryResult
    from kb_indexer.search.context import ContextScorer

__all__ = ["KnowledgeBase", "QueryOptions"]


def _check_type(sim_type: str | None) -> None:
    """A similarity type given as an option: an unknown one is bad usage (exit 2) in every command."""
    if sim_type is not None and sim_type not in SIMILARITY_TYPES:
        raise UsageError(f"Unknown similarity type {sim_type!r}; expected one of: {', '.join(SIMILARITY_TYPES)}")


def _text(value: Any, what: str, *, keyword: bool = False, context: bool = False) -> None:
    """User text at an entry point: valid Unicode (an argument with bytes that are not UTF-8 arrives with
    lone surrogates and is refused here, before SQLite or JSON), and a keyword or a user context within
    its length limit."""
    if value is None:
        return
    if keyword:
        check_keyword(value, what)
    if context and isinstance(value, str):
        check_context(value, what)
    if isinstance(value, str):
        check_utf8(value, what)


def _keywords(values: Any, what: str = "keyword") -> None:
    for value in values or []:
        _text(value, what, keyword=True)


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class KnowledgeBase(LearningAPI, SkillsAPI, ContextAPI, EnrichAPI):
    def __init__(self, conn: sqlite3.Connection, db_path: Path, kb_root: Path):
        self.conn = conn
        self.db_path = db_path
        self.kb_root = kb_root

    # -- opening -------------------------------------------------------------------------
    @staticmethod
    def _kb_root(conn: sqlite3.Connection | None, db_path: Path, kb: str | os.PathLike | None) -> Path:
        if kb:
            return Path(kb).expanduser().absolute()
        env = os.environ.get("KBINDEX_KB")
        if env:
            return Path(env).expanduser().absolute()
        if conn is not None:
            row = conn.execute("SELECT value FROM meta WHERE key = 'kb_root'").fetchone()
            if row and row[0]:
                return stored_root_path(db_path, row[0])
        return default_kb_root(db_path)

    @classmethod
    def open(cls, db: str | os.PathLike | None = None, kb: str | os.PathLike | None = None) -> "KnowledgeBase":
        db_path = find_db(db)
        conn = open_db(db_path)
        return cls(conn, db_path, cls._kb_root(conn, db_path, kb))

    @classmethod
    def init(cls, db: str | os.PathLike | None = None, kb: str | os.PathLike | None = None,
             force: bool = False) -> tuple["KnowledgeBase", dict]:
        """Create or upgrade the index; another application's SQLite file is refused unless ``force``."""
        db_path = find_db(db) if db or os.environ.get("KBINDEX_DB") else Path.cwd().absolute() / "kbindex.db"
        existed = db_path.is_file()
        kb_root = cls._kb_root(None, db_path, kb)
        if existed and not kb and not os.environ.get("KBINDEX_KB"):
            # Re-running init keeps the stored root.
            try:
                probe = open_db(db_path)
                kb_root = cls._kb_root(probe, db_path, None)
                probe.close()
            except Exception:
                pass
        conn, applied = init_db(db_path, stored_root_form(db_path, kb_root), force=force)
        result = {"db": str(db_path), "kb_root": str(kb_root), "created": not existed,
                  "migrations_applied": applied, "kb_root_exists": kb_root.is_dir()}
        return cls(conn, db_path, kb_root), result

    def learned_remove(self, ids: list[int] | None = None, all_: bool = False) -> dict:
        for i in ids or []:
            check_id(i, "learned item id")
        return super().learned_remove(ids, all_)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- documents -----------------------------------------------------------------------
    def add(self, path: str, keywords_file: str | None = None) -> dict:
        from kb_indexer.index.sync import add_document
        return add_document(self.conn, self.kb_root, path, keywords_file)

    def update(self, path: str) -> dict:
        from kb_indexer.index.sync import update_document
        return update_document(self.conn, self.kb_root, path)

    def remove(self, path: str) -> dict:
        from kb_indexer.index.sync import remove_document
        return remove_document(self.conn, self.kb_root, path)

    def sync(self, directory: str | None = None, progress=None, *, embed: bool = False, embed_options: Any = None,
             embed_progress=None) -> dict:
        """Index the KB incrementally; with ``embed``, then embed what changed (:meth:`embed`). An embedding
        failure does not undo the sync: it is reported in the result's ``embed`` object (``error``)."""
        from kb_indexer.index.sync import sync
        result = sync(self.conn, self.kb_root, directory, progress)
        if embed:
            try:
                result["embed"] = self.embed(embed=embed_options, progress=embed_progress)
            except KbError as exc:
                result["embed"] = {"error": exc.message, "code": exc.code, "details": exc.details or None}
        return result

    def embed(self, everything: bool = False, batch: int | None = None, *, embed: Any = None,
              progress=None) -> dict:
        """Embed the documents that changed since the last run (all with ``everything``) with the embedding
        model of ``embed`` (:class:`kb_indexer.llm.config.EmbedOptions`; default: the index's newest
        model, else ``KBINDEX_EMBED_*``, else Ollama's nomic-embed-text). ``batch``: texts per request."""
        from kb_indexer.llm.embed_index import client_for, embed_documents

        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 4096):
            raise UsageError(f"batch must be between 1 and 4096 texts, got {batch!r}")
        client = client_for(self.conn, embed, batch_size=batch)
        try:
            return embed_documents(self.conn, client, everything=everything, progress=progress)
        finally:
            client.close()

    def _stored_path(self, path: str) -> str:
        from kb_indexer.index.paths import to_relative
        return to_relative(self.kb_root, path, must_exist=False)

    def list_docs(self) -> dict:
        docs = [dict(r) for r in self.conn.execute(
            "SELECT d.filepath, d.title, d.summary, d.updated_at, "
            "(SELECT COUNT(*) FROM document_keywords dk WHERE dk.document_id = d.id) AS keyword_count "
            "FROM documents d ORDER BY d.filepath")]
        return {"documents": docs, "count": len(docs)}

    def show(self, path: str) -> dict:
        doc = require_document(self.conn, self._stored_path(path))
        return {
            "filepath": doc["filepath"], "title": doc["title"], "summary": doc["summary"],
            "keywords": [{"keyword": k["keyword"], "category": k["category"]}
                         for k in document_keywords(self.conn, doc["id"])],
            "keywords_file": doc["keywords_file"],
            "created_at": doc["created_at"], "updated_at": doc["updated_at"],
        }

    def keywords(self, path: str) -> dict:
        doc = require_document(self.conn, self._stored_path(path))
        kws = document_keywords(self.conn, doc["id"])
        return {"filepath": doc["filepath"], "keywords": kws, "count": len(kws)}

    # -- keywords ------------------------------------------------------------------------
    def _keyword_row(self, keyword: str) -> sqlite3.Row:
        _text(keyword, "keyword", keyword=True)
        row = self.conn.execute("SELECT * FROM keywords WHERE keyword = ?", (normalize_keyword(keyword),)).fetchone()
        if row is None:
            raise NotFoundError(f"Unknown keyword: {keyword!r}")
        return row

    def docs(self, keyword: str) -> dict:
        kw = self._keyword_row(keyword)
        docs = [dict(r) for r in self.conn.execute(
            "SELECT d.filepath, d.title, d.summary, dk.category, dk.source FROM document_keywords dk "
            "JOIN documents d ON d.id = dk.document_id WHERE dk.keyword_id = ? ORDER BY d.filepath", (kw["id"],))]
        return {"keyword": kw["display"], "documents": docs, "count": len(docs)}

    def stats(self, keyword: str) -> dict:
        kw = self._keyword_row(keyword)
        doc_count = self.conn.execute("SELECT COUNT(*) FROM document_keywords WHERE keyword_id = ?",
                                      (kw["id"],)).fetchone()[0]
        rel = neighbours(self.conn, kw["id"])
        by_type: dict[str, int] = {}
        for r in rel:
            by_type[r["similarity_type"]] = by_type.get(r["similarity_type"], 0) + 1
        return {"keyword": kw["display"], "normalized": kw["keyword"], "category": kw["category"],
                "document_count": doc_count, "related_keywords_count": len({r["keyword_id"] for r in rel}),
                "similarities_by_type": by_type}

    # -- similarities --------------------------------------------------------------------
    def similar(self, keyword: str, sim_type: str | None = None, user_context: str | None = None,
                context_threshold: float = DEFAULT_CONTEXT_THRESHOLD, llm: Any = None) -> dict:
        """Related keywords; with ``user_context``, only those whose context fits it (LLM-scored,
        ``llm`` = :class:`kb_indexer.llm.config.LLMOptions`; see :mod:`kb_indexer.llm.context_match`)."""
        _check_type(sim_type)
        _text(user_context, "--user-context", context=True)
        kw = self._keyword_row(keyword)
        if user_context is not None:
            from kb_indexer.llm.context_match import similar_in_context
            return similar_in_context(self.conn, kw["display"], neighbours(self.conn, kw["id"], sim_type),
                                      user_context, context_threshold, llm)
        items = [{
            "keyword": r["keyword"], "similarity_type": r["similarity_type"], "context": r["context"],
            "score": r["score"], "directional": r["directional"], "direction": r["direction"],
        } for r in neighbours(self.conn, kw["id"], sim_type)]
        return {"keyword": kw["display"], "similar_keywords": items, "count": len(items)}

    def relate(self, keyword1: str, keyword2: str, sim_type: str, context: str, score: float = 0.5,
               directional: bool = False) -> dict:
        from kb_indexer.store.provenance import lift
        _check_type(sim_type)
        _keywords([keyword1, keyword2])
        _text(context, "context")
        with transaction(self.conn):
            ids = KeywordIds(self.conn)
            sid, created = upsert_similarity(self.conn, ids, keyword1, keyword2, sim_type, context, score,
                                             directional, "person")
            lift(self.conn, ids.get(keyword1), ids.get(keyword2), sim_type)  # a person's relation again
        return {"action": "created" if created else "updated", "id": sid, "keyword1": keyword1,
                "keyword2": keyword2, "type": sim_type, "context": context, "score": float(score),
                "directional": directional}

    def unrelate(self, keyword1: str, keyword2: str, sim_type: str | None = None) -> dict:
        from kb_indexer.store.similarities import delete_similarity
        _check_type(sim_type)
        _keywords([keyword1, keyword2])
        with transaction(self.conn):
            n = delete_similarity(self.conn, keyword1, keyword2, sim_type)
        return {"action": "removed", "keyword1": keyword1, "keyword2": keyword2, "type": sim_type, "removed": n}

    def import_similarities(self, path: str) -> dict:
        from kb_indexer.index.sync import import_similarities
        p = Path(path).expanduser()
        return import_similarities(self.conn, p)

    def export_similarities(self, learned: bool = False) -> dict:
        """The relations in the ``similarities.json`` format: ``{"similarities": [...]}``. By default those
        a person keeps in the editable file (from files, ``relate``, ``import-similarities``, with the
        scores they gave); ``learned=True`` adds learned relations and learned score changes. Importing
        the result into an empty index and exporting again gives the same data."""
        from kb_indexer.store.similarity_export import editable_similarities
        return {"similarities": editable_similarities(self.conn, learned)}

    # -- search --------------------------------------------------------------------------
    def search(self, keywords: list[str], mode: str = "or", limit: int | None = SEARCH_DEFAULT_LIMIT) -> dict:
        """Documents tagged with the keywords (``limit`` 0 or None: all; ``total`` counts every match)."""
        from kb_indexer.search.keyword import keyword_search
        from kb_indexer.store.interrupt import interruptible

        _keywords(keywords)

        with interruptible(self.conn):
            return keyword_search(self.conn, keywords, mode, limit)

    def query(self, question: str, keywords: list[str] | None = None, options: QueryOptions | None = None, *,
              llm: Any = None, embed: Any = None, context_scorer: ContextScorer | None = None,
              query_id: int | None = None) -> QueryResult:
        """Ranked retrieval with similarity expansion, full text and provenance; recorded in the history.

        ``options``: :class:`QueryOptions` (context, expand_depth, min_weight, context_threshold, types,
        weights, method, limit, explain, column_weights, record, use_learned; None: the defaults).
        With a ``context`` and an LLM backend configured (``llm`` options, ``KBINDEX_LLM_BACKEND`` or
        ``.env``), relations are judged against the context by the LLM (or by ``context_scorer``);
        otherwise lexically. The result's ``llm`` object says which. Semantic and hybrid queries use the
        index's vectors of the embedding model of ``embed`` (:class:`kb_indexer.llm.config.EmbedOptions`;
        default: the index's newest); without them they run lexically and the result's ``semantic`` object
        says why. ``query_id``: record the attempt on that recorded query (``refine``).
        """
        opts = options or QueryOptions()
        _text(question, "the question")
        _keywords(keywords)
        check_question(question, keywords)   # before any model is asked or anything recorded
        context = opts.context
        if not (isinstance(context, str) and context.strip()) or context_scorer is not None:
            return self._run_query(question, keywords, opts, embed, context_scorer, query_id)
        from kb_indexer.llm.config import is_configured  # lazy: the LLM settings only for a query with a context

        if not is_configured(llm):
            out = self._run_query(question, keywords, opts, embed, None, query_id)
            out["llm"] = {"backend": None, "model": None, "used": False, "fallback": "lexical",
                          "error": None, "reason": "no LLM backend configured (--llm-backend or KBINDEX_LLM_BACKEND)"}
            return out
        from kb_indexer.llm.context_match import QueryContextScorer  # lazy: LLM client code, context queries only

        scorer = QueryContextScorer(self.conn, llm)
        try:
            out = self._run_query(question, keywords, opts, embed, scorer, query_id)
        finally:
            scorer.close()
        report = scorer.report()
        out["llm"], out["cache"] = report["llm"], report["cache"]
        return out

    def _run_query(self, question: str, keywords: list[str] | None, opts: QueryOptions, embed: Any,
                   context_scorer: ContextScorer | None, query_id: int | None) -> QueryResult:
        """The search pipeline with the learning layer's parts passed in (search never imports learn)."""
        from kb_indexer.learn.apply import association_boosts  # lazy: the query path only (kbindex search
        from kb_indexer.learn.history import record            # opens the API too and needs none of these)
        from kb_indexer.search.query import run_query          # lazy: as above
        from kb_indexer.store.interrupt import interruptible   # lazy: as above

        lost: list[str] = []

        def recorder(conn: sqlite3.Connection, *args: Any, **kwargs: Any) -> tuple[int, int]:
            try:
                return record(conn, *args, **kwargs)
            except sqlite3.OperationalError as exc:  # reported in the result (history_error), with its code
                mapped = from_sqlite(exc, self.db_path)
                if mapped is None:
                    raise
                lost.append(mapped.code)
                raise sqlite3.OperationalError(mapped.message) from exc

        dense = None
        if opts.method not in ("keyword", "sqlite", "fulltext"):
            from kb_indexer.llm.embed_query import dense_source  # lazy: embedding clients, vector methods only
            dense = dense_source(self.conn, embed)
        with interruptible(self.conn):
            out = run_query(self.conn, question, keywords, opts, context_scorer=context_scorer, query_id=query_id,
                            learned=association_boosts, recorder=recorder, dense=dense)
        if lost and out.get("history_error"):
            out["history_error_code"] = lost[0]
        return out

    def query_markdown(self, question: str, keywords: list[str] | None = None,
                       options: QueryOptions | None = None, *, llm: Any = None, embed: Any = None) -> str:
        """:meth:`query` rendered as a context-injection markdown block."""
        from kb_indexer.search.markdown import render_query  # lazy: as in _run_query
        return render_query(self.query(question, keywords, options, llm=llm, embed=embed))

    def stale(self, full: bool = False) -> dict:
        """Which files changed on disk since the last sync (stats only; see
        :func:`kb_indexer.index.stale.check` for the quick mode of large knowledge bases)."""
        from kb_indexer.index.stale import check
        return check(self.conn, self.kb_root, full=full)

    # -- LLM cache and doctor ------------------------------------------------------------
    def cache_stats(self) -> dict:
        """Entries, hits and size of the LLM answer cache, per task, backend and model."""
        from kb_indexer.llm import cache as llm_cache
        return llm_cache.stats(self.conn)

    def cache_clear(self, task: str | None = None, backend: str | None = None, model: str | None = None) -> dict:
        """Delete cached LLM answers (all, or those matching every given filter)."""
        from kb_indexer.llm import cache as llm_cache
        removed = llm_cache.clear(self.conn, task=task, backend=backend, model=model)
        return {"removed": removed, "task": task, "backend": backend, "model": model}

    @staticmethod
    def doctor(db: str | os.PathLike | None = None, llm: Any = None, roundtrip: bool = True) -> dict:
        """Check the LLM setup and the index (works without an index: a missing one is a problem
        in the report). ``llm`` = :class:`kb_indexer.llm.config.LLMOptions`."""
        from kb_indexer.llm.doctor import diagnose
        return diagnose(db, llm, roundtrip=roundtrip)

    # -- database ------------------------------------------------------------------------
    def export(self) -> dict:
        from kb_indexer.store.export import export_all
        return export_all(self.conn)

    def import_(self, data: Any, force: bool = False) -> dict:
        from kb_indexer.index.similarity_sync import adopt_unchanged_files
        from kb_indexer.store.export import import_all

        return {"imported": import_all(self.conn, data, force=force,
                                       after_load=lambda conn: adopt_unchanged_files(conn, self.kb_root))}

    def db_stats(self) -> dict:
        from kb_indexer.store.sparse import describe

        c = self.conn
        one = lambda sql: c.execute(sql).fetchone()[0]  # noqa: E731
        by_type = {r[0]: r[1] for r in c.execute(
            "SELECT similarity_type, COUNT(*) FROM keyword_similarities GROUP BY similarity_type ORDER BY 1")}
        return {
            "documents": one("SELECT COUNT(*) FROM documents"),
            "keywords": one("SELECT COUNT(*) FROM keywords"),
            "document_keywords": one("SELECT COUNT(*) FROM document_keywords"),
            "similarities": one("SELECT COUNT(*) FROM keyword_similarities"),
            "similarities_by_type": by_type,
            "queries": one("SELECT COUNT(*) FROM queries"),
            "query_attempts": one("SELECT COUNT(*) FROM query_attempts"),
            "feedback": one("SELECT COUNT(*) FROM query_feedback"),
            "embeddings": vector_coverage(c),
            "fulltext_index": describe(c),
            "db": str(self.db_path), "kb_root": str(self.kb_root),
            "schema": schema_version(c),
        }
