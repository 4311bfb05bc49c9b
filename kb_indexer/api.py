"""The Python API behind every CLI command (the CLI is a thin shell over this).

    from kb_indexer.api import KnowledgeBase
    with KnowledgeBase.open() as kb:
        print(kb.search(["reinforcement learning"]))
        print(kb.skills.match("turn off the TV"))

The facade keeps opening and closing, documents, keywords, similarities, search and query, the stale
check, the LLM cache, export/import and stats. Each feature has its own sub-API, built on first use
(the sqlite-utils ``db.table()`` pattern, so a cold ``search`` imports none of them):
``kb.skills`` (:class:`~kb_indexer.skills.api.SkillsAPI`), ``kb.context``
(:class:`~kb_indexer.context.api.ContextAPI`), ``kb.learning`` (:class:`~kb_indexer.learn.api.LearningAPI`),
``kb.enrich`` (:class:`~kb_indexer.enrich.api.EnrichAPI`), ``kb.embeddings``
(:class:`~kb_indexer.embed.api.EmbeddingsAPI`) and ``kb.rules`` (:class:`~kb_indexer.search.rules_api.RulesAPI`).

Every method returns plain JSON-ready data and raises ``KbError`` on bad input.
"""

from __future__ import annotations

import os
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Mapping, cast

from kb_indexer import settings
from kb_indexer.config import (DbArg, DbTarget, default_kb_root, find_db, named_db, named_root, warn_shadowed,
                               stored_root_form, stored_root_path)
from kb_indexer.errors import KbError, NotFoundError, UsageError
from kb_indexer.roots import foreign_root, remember
from kb_indexer.store.kb_root import repointed
from kb_indexer.limits import (MAX_ID, check_context, check_instance, check_keyword, check_strings, check_text_arg,
                               check_unit_arg, check_utf8)
from kb_indexer.index.paths import to_relative
from kb_indexer.defaults import DEFAULT_CONTEXT_THRESHOLD, SEARCH_DEFAULT_LIMIT, SIMILAR_DEFAULT_LIMIT
from kb_indexer.learn.requests import relate as relate_keywords, unrelate as unrelate_keywords
from kb_indexer.search.expansion import parse_weight_options
from kb_indexer.search.keyword import keyword_search
from kb_indexer.search.options import QueryOptions
from kb_indexer.search.similar import similar as related_keywords
from kb_indexer.search.question import check_question
from kb_indexer.store import index_exists, meta, open_db
from kb_indexer.store.documents import document_keywords, get_body, require_document
from kb_indexer.store.errors import OperationalError, translate, translating
from kb_indexer.store.interrupt import interruptible
from kb_indexer.store.opening import init_db
from kb_indexer.store.team import on_behalf, require_role
from kb_indexer.store.similarities import check_similarity_type, neighbours
from kb_indexer.store.similarity_export import dumps_similarities, editable_similarities
from kb_indexer.text import normalize_keyword
from kb_indexer.store.connection import pooling
from kb_indexer.store.dbapi import Connection, Row

if TYPE_CHECKING:   # the sub-APIs' modules are imported when first used (see the properties below)
    from kb_indexer.context.api import ContextAPI
    from kb_indexer.embed.api import EmbeddingsAPI
    from kb_indexer.enrich.api import EnrichAPI
    from kb_indexer.index.api import IndexAPI
    from kb_indexer.learn.api import LearningAPI
    from kb_indexer.skills.api import SkillsAPI
    from kb_indexer.search.rules_api import RulesAPI
    from kb_indexer.embed.index import Progress
    from kb_indexer.llm.config import EmbedOptions, LLMOptions
    from kb_indexer.llm.structured import LLMClient
    from kb_indexer.results import JsonObject, LlmReport, QueryResult
    from kb_indexer.search.context import ContextScorer
    from kb_indexer.results import (
        CacheClearResult, CacheStatsResult, DbStatsResult, DocumentResult, DocumentText, DoctorResult, EmbedError,
        ExportResult,
        ExportSimilaritiesResult, ImportResult, ImportSimilaritiesResult, InitResult, KeywordDocsResult,
        KeywordStatsResult, KeywordsResult, ListDocsResult, RelateResult, RemoveResult, SearchResult, ShowResult,
        SimilarResult, StaleNote, StaleResult, SyncResult, UnrelateResult,
    )

__all__ = ["EmbedOptions", "KnowledgeBase", "LLMOptions", "QueryOptions", "check_question", "documented_error",
           "parse_weight_options", "render_query", "render_search", "similarities_file_text"]


def __getattr__(name: str) -> Any:
    """``LLMOptions`` and ``EmbedOptions`` (the options of the LLM and embedding backends, taken by
    ``similar``, ``query``, ``kb.skills.match``, ``kb.context.*``, ``kb.enrich.*``, ``kb.embeddings.embed``),
    importable from here but loaded on first use: the LLM settings stay off the cold search path."""
    if name in ("LLMOptions", "EmbedOptions"):
        from kb_indexer.llm import config  # lazy: the LLM settings (.env rules) cost ~15 ms of a cold search
        return getattr(config, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _check_type(sim_type: str | None) -> None:
    """A similarity type given as an option: an unknown one is bad usage (exit 2) in every command."""
    if sim_type is not None:
        check_similarity_type(sim_type)


def _check_slice(offset: Any, limit: Any) -> None:
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise UsageError(f"offset must be a whole number from 0, got {offset!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise UsageError(f"limit must be a whole number from 0 (or none: to the end), got {limit!r}")


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


def _keywords(values: Any, name: str = "keywords", *, optional: bool = False) -> None:
    """A list of keywords (``name``: the parameter; ``optional``: None allowed), each within the limits."""
    for value in check_strings(values, name, optional=optional):
        _text(value, "keyword", keyword=True)


def documented_error(exc: BaseException) -> KbError | None:
    """The documented :class:`KbError` an exception out of this API stands for (itself if it is one; a
    database or file-system failure mapped to busy, read_only, disk_full, ...); None means a bug. Front
    ends map what they catch with this."""
    return translate(exc)


def similarities_file_text(entries: list[JsonObject]) -> str:
    """The relations of :meth:`KnowledgeBase.export_similarities` as the text of a ``similarities.json``
    file, one relation a line (as the bundled file is written: diffs stay readable)."""
    return dumps_similarities(entries)


def render_query(result: Mapping[str, Any]) -> str:
    """A query result as markdown (what ``query --format markdown`` prints and chat shows)."""
    from kb_indexer.search.markdown import render_query as render  # lazy: only a markdown answer needs it

    return render(result)


def render_search(result: Mapping[str, Any]) -> str:
    """A ``search`` result as markdown (``search --format markdown``)."""
    from kb_indexer.search.markdown import render_search as render  # lazy: only a markdown answer needs it

    return render(result)


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class KnowledgeBase:
    _SUB_APIS = ("skills", "context", "learning", "enrich", "embeddings", "rules", "_index")

    paths_from_cwd = True   # a relative path may name a file from the working directory (a command line's)

    def __init__(self, conn: Connection, db_path: DbTarget, kb_root: Path):
        self.conn = conn
        self.db_path = db_path
        self.kb_root = kb_root

    @property
    def conn(self) -> Connection:
        return self._conn

    @conn.setter
    def conn(self, value: Connection) -> None:
        """A new connection (e.g. the index reopened): the sub-APIs built on the old one are built again."""
        self._conn = value
        for name in self._SUB_APIS:
            self.__dict__.pop(name, None)

    # -- feature sub-APIs (built on first use; each imports its feature package) -----------
    @cached_property
    def skills(self) -> SkillsAPI:
        """SKILL.md skills: ``sync``, ``all``, ``show``, ``source``, ``remove``, ``match``, ``session``, ``load``."""
        from kb_indexer.skills.api import SkillsAPI  # lazy: the skills package stays off the cold search path
        return SkillsAPI(self.conn, self.db_path)

    @cached_property
    def context(self) -> ContextAPI:
        """Chat-context sessions: ``add``, ``build``, ``show``, ``reset``, ``sessions``, ``compress``."""
        from kb_indexer.context.api import ContextAPI  # lazy: the context package stays off the cold search path
        return ContextAPI(self.conn, self.db_path)

    @cached_property
    def learning(self) -> LearningAPI:
        """History, feedback and learning: ``history``, ``feedback``, ``feedback_show``, ``learn``,
        ``learned_list``, ``learned_remove``, ``clear_history``, ``refine``, ``last_query_id``."""
        from kb_indexer.learn.api import LearningAPI  # lazy: learning's modules stay off the cold search path
        return LearningAPI(self)

    @cached_property
    def enrich(self) -> EnrichAPI:
        """Generated keywords and relations: ``documents``, ``sync``, ``suggest_similarities``."""
        # lazy: the enrich package and the LLM client stay off the cold path
        from kb_indexer.enrich.api import EnrichAPI
        return EnrichAPI(self)

    @cached_property
    def embeddings(self) -> EmbeddingsAPI:
        """The chunk vectors of semantic search: ``embed``."""
        from kb_indexer.embed.api import EmbeddingsAPI  # lazy: embed/ (and numpy) stay off the cold search path
        return EmbeddingsAPI(self.conn, self.db_path)

    @cached_property
    def rules(self) -> RulesAPI:
        """Pin and hide rules (a team's curation of what a question shows): ``pin``, ``hide``, ``list``, ``remove``."""
        from kb_indexer.search.rules_api import RulesAPI  # lazy: only the rules commands need it
        return RulesAPI(self)

    @cached_property
    def _index(self) -> IndexAPI:
        """The indexer behind the document and export/import methods below."""
        # lazy: index.sync and its file readers stay off the cold search path
        from kb_indexer.index.api import IndexAPI
        return IndexAPI(self.conn, self.kb_root, self.db_path)

    # -- opening -------------------------------------------------------------------------
    @staticmethod
    def _kb_root(conn: Connection | None, db_path: DbTarget, kb: str | os.PathLike[str] | None) -> Path:
        given = named_root(kb)
        if given:   # '..' taken as a shell's `cd` takes it: /p/proj/../notes is /p/notes
            return Path(os.path.normpath(Path(given).expanduser().absolute()))
        if conn is not None:
            stored = meta.get(conn, "kb_root")
            if stored:
                return stored_root_path(db_path, stored)
        return default_kb_root(db_path)

    @classmethod
    def open(cls, db: DbArg = None, kb: str | os.PathLike[str] | None = None, *,
             read_only: bool = False) -> "KnowledgeBase":
        """Open the index ``db`` (a file, or a ``postgresql://`` URL; None: ``KBINDEX_DB``, else the nearest
        kbindex.db); ``read_only``: as a read-only file (queries answer unrecorded, writes fail as read_only)."""
        db_path = find_db(db)

        def check(conn: Connection) -> None:   # found (it may have come with a cloned repository) and naming a
            problem = foreign_root(cast(Path, db_path), cls._kb_root(conn, db_path, None))   # root elsewhere:
            if problem:                                                                   # see roots.py
                raise KbError(problem, code="outside_kb")   # before open_db upgrades (writes) anything

        conn = open_db(db_path, None if named_root(kb) or named_db(db) else check, read_only)
        return cls(conn, db_path, cls._kb_root(conn, db_path, kb))

    @staticmethod
    def serving(db: DbArg = None) -> ContextManager[None]:
        """For a long-lived process that opens the index per request (the MCP server) or keeps it open (chat):
        while the block runs, :meth:`open` on a PostgreSQL server takes a connection from a small pool (1 to 8
        connections, each checked when taken) and ``close()`` gives it back. SQLite: nothing changes."""
        return pooling(find_db(db))

    #: ``with KnowledgeBase.on_behalf(name):`` what is recorded in the block (this thread or task) is asked on behalf
    #: of ``name`` (a service answering for others; docs/teams.md, "Who asked, and who may do what").
    on_behalf = staticmethod(on_behalf)

    @classmethod
    def init(cls, db: DbArg = None, kb: str | os.PathLike[str] | None = None,
             force: bool = False) -> tuple[KnowledgeBase, InitResult]:
        """Create or upgrade the index; another application's SQLite file, or another root for an index holding
        documents, is refused unless ``force``."""
        db_path = find_db(db) if named_db(db) else Path.cwd().absolute() / "kbindex.db"
        existed = index_exists(db_path)
        kb_root = cls._kb_root(None, db_path, kb)
        if existed:   # re-running init keeps the stored root; --kb changes it for everyone: not silently
            kb_root = repointed(db_path, kb_root, lambda conn: cls._kb_root(conn, db_path, None),
                                named=bool(named_root(kb)), force=force)
        if not existed and not named_db(db):
            warn_shadowed(db_path)   # an index in a parent folder that commands run here will no longer find
        conn, applied = init_db(db_path, stored_root_form(db_path, kb_root), force=force)
        if not existed or named_root(kb):   # a root set here (a new index, or --kb): roots.py
            remember(db_path, kb_root)
        created = any(name.startswith("m001_") for name in applied)   # this call made the schema (not a racer)
        result: InitResult = {"db": str(db_path), "kb_root": str(kb_root), "created": created,
                  "migrations_applied": applied, "kb_root_exists": kb_root.is_dir()}
        return cls(conn, db_path, kb_root), result

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- documents -----------------------------------------------------------------------
    def add(self, path: str, keywords_file: str | None = None) -> DocumentResult:
        return self._index.add(path, keywords_file)

    def update(self, path: str) -> DocumentResult:
        return self._index.update(path)

    def remove(self, path: str) -> RemoveResult:
        return self._index.remove(path)

    def sync(self, directory: str | None = None, progress: Progress | None = None, *, embed: bool = False,
             embed_options: EmbedOptions | None = None, embed_progress: Progress | None = None,
             force: bool = False) -> SyncResult:
        """Index the KB incrementally; with ``embed``, then embed what changed (:meth:`embed`). An embedding
        failure does not undo the sync: it is reported in the result's ``embed`` object (``error``).
        ``embed_options``: the embedding model (see :meth:`kb_indexer.embed.api.EmbeddingsAPI.embed`). A sync
        that finds none of the indexed documents removes them only with ``force`` (else ``would_remove_all``);
        so does one that finds a similarities file gone (else its relations stay, with a warning)."""
        if force:
            require_role(self.conn, "curator", "sync --force")
        result = self._index.sync(directory, progress, force)
        if embed:
            try:
                result["embed"] = self.embeddings.embed(embed=embed_options, progress=embed_progress)
            except KbError as exc:
                failed: EmbedError = {"error": exc.message, "code": exc.code, "details": exc.details or None}
                result["embed"] = failed
        return result

    def stored_path(self, path: str) -> str:
        """``path`` (absolute, or relative to the working directory unless ``paths_from_cwd`` is False, or the KB root)."""
        return to_relative(self.kb_root, path, must_exist=False, from_cwd=self.paths_from_cwd)

    def list_docs(self, offset: int = 0, limit: int | None = None) -> ListDocsResult:
        """The indexed documents by path; ``offset``/``limit`` (None: all) give one page of them."""
        _check_slice(offset, limit)
        docs = [dict(r) for r in self.conn.execute(
            "SELECT d.filepath, d.title, d.summary, d.updated_at, "
            "(SELECT COUNT(*) FROM document_keywords dk WHERE dk.document_id = d.id) AS keyword_count "
            "FROM documents d ORDER BY d.filepath LIMIT ? OFFSET ?", (MAX_ID if limit is None else limit, offset))]
        return cast("ListDocsResult", {"documents": docs, "count": len(docs)})

    def show(self, path: str) -> ShowResult:
        doc = require_document(self.conn, self.stored_path(path))
        return {
            "filepath": doc["filepath"], "title": doc["title"], "summary": doc["summary"],
            "keywords": [{"keyword": k["keyword"], "category": k["category"]}
                         for k in document_keywords(self.conn, doc["id"])],
            "keywords_file": doc["keywords_file"],
            "created_at": doc["created_at"], "updated_at": doc["updated_at"],
        }

    def read(self, path: str, offset: int = 0, limit: int | None = None) -> DocumentText:
        """A document's indexed text from character ``offset``, at most ``limit`` characters (None: to the
        end). The path is resolved as in :meth:`show` (outside the root: refused; not indexed: not_found);
        an offset past the end is bad usage."""
        _check_slice(offset, limit)
        doc = require_document(self.conn, self.stored_path(path))
        body = get_body(self.conn, doc["id"])
        if offset > len(body):
            raise UsageError(f"offset {offset} is past the end of {doc['filepath']} ({len(body)} characters)")
        end = len(body) if limit is None else min(len(body), offset + limit)
        return {"filepath": doc["filepath"], "title": doc["title"], "text": body[offset:end], "offset": offset,
                "total_chars": len(body), "more": end < len(body)}

    def keywords(self, path: str) -> KeywordsResult:
        doc = require_document(self.conn, self.stored_path(path))
        kws = document_keywords(self.conn, doc["id"])
        return cast("KeywordsResult", {"filepath": doc["filepath"], "keywords": kws, "count": len(kws)})

    # -- keywords ------------------------------------------------------------------------
    def _keyword_row(self, keyword: str) -> Row:
        _text(check_text_arg(keyword, "keyword"), "keyword", keyword=True)
        row = self.conn.execute("SELECT * FROM keywords WHERE keyword = ?", (normalize_keyword(keyword),)).fetchone()
        if row is None:
            raise NotFoundError(f"Unknown keyword: {keyword!r} (no document is tagged with it; `kbindex query` "
                                "also searches the full text)")
        return cast(Row, row)

    def docs(self, keyword: str) -> KeywordDocsResult:
        kw = self._keyword_row(keyword)
        docs = [dict(r) for r in self.conn.execute(
            "SELECT d.filepath, d.title, d.summary, dk.category, dk.source FROM document_keywords dk "
            "JOIN documents d ON d.id = dk.document_id WHERE dk.keyword_id = ? ORDER BY d.filepath", (kw["id"],))]
        return cast("KeywordDocsResult", {"keyword": kw["display"], "documents": docs, "count": len(docs)})

    def stats(self, keyword: str) -> KeywordStatsResult:
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
                context_threshold: float = DEFAULT_CONTEXT_THRESHOLD, llm: LLMOptions | None = None,
                limit: int | None = SIMILAR_DEFAULT_LIMIT) -> SimilarResult:
        """Related keywords, the strongest first: at most ``limit`` (0 or None: all; ``total`` counts them
        all); with ``user_context``, only those whose context fits it (LLM-scored, ``llm`` =
        :class:`kb_indexer.llm.config.LLMOptions`; see :mod:`kb_indexer.search.context_match`)."""
        _check_type(sim_type)
        _text(user_context, "user_context (--user-context)", context=True)
        kw = self._keyword_row(keyword)
        return cast("SimilarResult", related_keywords(self.conn, kw["id"], kw["display"], sim_type, user_context,
                                                      context_threshold, llm, limit))

    def relate(self, keyword1: str, keyword2: str, sim_type: str, context: str, score: float = 0.5,
               directional: bool = False) -> RelateResult:
        _check_type(sim_type)
        _keywords([check_text_arg(keyword1, "keyword1"), check_text_arg(keyword2, "keyword2")])
        _text(context, "context")
        check_unit_arg(score, "score")
        # a member's is held for review under the review policy (kb_indexer.learn.requests)
        return cast("RelateResult", relate_keywords(self.conn, keyword1, keyword2, sim_type, context, score, directional))

    def unrelate(self, keyword1: str, keyword2: str, sim_type: str | None = None) -> UnrelateResult:
        _check_type(sim_type)
        _keywords([check_text_arg(keyword1, "keyword1"), check_text_arg(keyword2, "keyword2")])
        return cast("UnrelateResult", unrelate_keywords(self.conn, keyword1, keyword2, sim_type))

    def import_similarities(self, path: str) -> ImportSimilaritiesResult:
        return self._index.import_similarities(path)

    def export_similarities(self, learned: bool = False) -> ExportSimilaritiesResult:
        """The relations in the ``similarities.json`` format: ``{"similarities": [...]}``. By default those
        a person keeps in the editable file (from files, ``relate``, ``import-similarities``, with the
        scores they gave); ``learned=True`` adds learned relations and learned score changes. Importing
        the result into an empty index and exporting again gives the same data."""
        return cast("ExportSimilaritiesResult", {"similarities": editable_similarities(self.conn, learned)})

    # -- search --------------------------------------------------------------------------
    def search(self, keywords: list[str], mode: str = "or", limit: int | None = SEARCH_DEFAULT_LIMIT) -> SearchResult:
        """Documents tagged with the keywords (``limit`` 0 or None: all; ``total`` counts every match)."""
        _keywords(keywords)

        with interruptible(self.conn):
            return cast("SearchResult", keyword_search(self.conn, keywords, mode, limit))

    def query(self, question: str, keywords: list[str] | None = None, options: QueryOptions | None = None, *,
              llm: Any = None, embed: Any = None, context_scorer: ContextScorer | None = None,
              query_id: int | None = None, rerank: str | None = None) -> QueryResult:
        """Ranked retrieval with similarity expansion, full text and provenance; recorded in the history.

        ``options``: :class:`QueryOptions` (context, expand_depth, min_weight, context_threshold, types,
        weights, method, limit, explain, column_weights, record, use_learned; None: the defaults).
        With a ``context`` and an LLM backend configured (``llm`` options, ``KBINDEX_LLM_BACKEND`` or
        ``.env``), relations are judged against the context by the LLM (or by ``context_scorer``);
        otherwise lexically. The result's ``llm`` object says which. Semantic and hybrid queries use the
        index's vectors of the embedding model of ``embed`` (:class:`kb_indexer.llm.config.EmbedOptions`;
        default: the index's newest); without them they run lexically and the result's ``semantic`` object
        says why. ``query_id``: record the attempt on that recorded query (``refine``). ``rerank``: ``llm``,
        the URL of a ``/rerank`` endpoint or ``off`` (None: ``KBINDEX_RERANK``, off when unset) reorders
        the top results (:mod:`kb_indexer.search.rerank`; the result's ``rerank`` object says how).
        """
        reranker = None
        if rerank is not None or settings.flag("KBINDEX_RERANK"):
            from kb_indexer.search import rerank as stage  # lazy: the LLM client, reranked queries only
            spec = stage.resolve(rerank)
            if spec is not None:   # runs before the attempt is recorded: the history keeps the order shown
                reranker = partial(stage.rerank, self.conn, question, spec=spec, llm=llm)
        return self._query(question, keywords, options, llm, embed, context_scorer, query_id, reranker)

    def _query(self, question: str, keywords: list[str] | None, options: QueryOptions | None, llm: Any,
               embed: Any, context_scorer: ContextScorer | None, query_id: int | None,
               reranker: Any = None) -> QueryResult:
        """:meth:`query` with its optional rerank stage (``reranker``) resolved."""
        opts = check_instance(options, QueryOptions, "options") or QueryOptions()
        _text(question, "the question")
        _keywords(keywords, optional=True)
        check_question(question, keywords)   # before any model is asked or anything recorded
        context = opts.context
        if not (isinstance(context, str) and context.strip()) or context_scorer is not None:
            return self._run_query(question, keywords, opts, embed, context_scorer, query_id, reranker)
        # lazy: the LLM settings only for a query with a context
        from kb_indexer.llm.config import is_configured, unconfigured_report

        if not is_configured(llm):
            out = self._run_query(question, keywords, opts, embed, None, query_id, reranker)
            out["llm"] = cast("LlmReport", unconfigured_report(llm))
            return out
        from kb_indexer.search.context_match import QueryContextScorer  # lazy: LLM client code, context queries only

        scorer = QueryContextScorer(self.conn, llm)
        try:
            out = self._run_query(question, keywords, opts, embed, scorer, query_id, reranker)
        finally:
            scorer.close()
        report = scorer.report()
        out["llm"], out["cache"] = report["llm"], report["cache"]
        return out

    def _run_query(self, question: str, keywords: list[str] | None, opts: QueryOptions, embed: Any,
                   context_scorer: ContextScorer | None, query_id: int | None, reranker: Any = None) -> QueryResult:
        """The search pipeline with the learning layer's parts passed in (search never imports learn)."""
        from kb_indexer.learn.apply import association_boosts  # lazy: the query path only (kbindex search
        from kb_indexer.learn.history import record            # opens the API too and needs none of these)
        from kb_indexer.search.query import run_query          # lazy: as above

        lost: list[str] = []

        def recorder(conn: Connection, *args: Any, **kwargs: Any) -> tuple[int, int]:
            try:
                return record(conn, *args, **kwargs)
            except OperationalError as exc:  # reported in the result (history_error), with its code
                mapped = translate(exc, self.db_path)
                if mapped is None:
                    raise
                lost.append(mapped.code)
                raise type(exc)(mapped.message) from exc

        dense = None
        if opts.method not in ("keyword", "sqlite", "fulltext"):
            from kb_indexer.embed.query import dense_source  # lazy: embedding clients, vector methods only
            dense = dense_source(self.conn, embed)
        with interruptible(self.conn):
            out = run_query(self.conn, question, keywords, opts, context_scorer=context_scorer, query_id=query_id,
                            learned=association_boosts, recorder=recorder, dense=dense, reranker=reranker)
        if lost and out.get("history_error"):
            out["history_error_code"] = lost[0]
        return out

    def query_markdown(self, question: str, keywords: list[str] | None = None,
                       options: QueryOptions | None = None, *, llm: Any = None, embed: Any = None) -> str:
        """:meth:`query` rendered as a context-injection markdown block."""
        return render_query(self.query(question, keywords, options, llm=llm, embed=embed))

    def stale(self, full: bool = False) -> StaleResult:
        """Which files changed on disk since the last sync (stats only; see
        :func:`kb_indexer.index.stale.check` for the quick mode of large knowledge bases)."""
        # lazy: the stale check (dataclasses, the walk) is kept off the cold search path; a query runs it
        from kb_indexer.index.stale import check
        return cast("StaleResult", check(self.conn, self.kb_root, full=full))

    def stale_note(self) -> StaleNote | None:
        """What a query says when files changed since the last sync (None: none did): a one-line ``message``
        and the counts; on a shared (PostgreSQL) index without the files here, that nothing is checked."""
        from kb_indexer.index.stale import note  # lazy: as in stale()
        return note(self.conn, self.kb_root, self.stale)

    # -- LLM cache and doctor ------------------------------------------------------------
    def cache_stats(self) -> CacheStatsResult:
        """Entries, hits and size of the LLM answer cache, per task, backend and model."""
        from kb_indexer.llm import cache as llm_cache  # lazy: hashlib (OpenSSL) stays off the cold search path
        return cast("CacheStatsResult", llm_cache.stats(self.conn))

    def cache_clear(self, task: str | None = None, backend: str | None = None,
                    model: str | None = None) -> CacheClearResult:
        """Delete cached LLM answers (all, or those matching every given filter)."""
        from kb_indexer.llm import cache as llm_cache  # lazy: hashlib (OpenSSL) stays off the cold search path
        removed = llm_cache.clear(self.conn, task=task, backend=backend, model=model)
        return {"removed": removed, "task": task, "backend": backend, "model": model}

    @staticmethod
    def doctor(db: DbArg = None, llm: LLMOptions | None = None,
               roundtrip: bool = True) -> DoctorResult:
        """Check the LLM setup and the index (works without an index: a missing one is a problem
        in the report). ``llm`` = :class:`kb_indexer.llm.config.LLMOptions`."""
        from kb_indexer.doctor import diagnose  # lazy: the LLM client and backends stay off the cold search path
        return cast("DoctorResult", diagnose(db, llm, roundtrip=roundtrip))

    # -- database ------------------------------------------------------------------------
    def export(self) -> ExportResult:
        return self._index.export()

    def export_to(self, out: Callable[[str], Any]) -> dict[str, int]:
        """Write the export's JSON text (what :meth:`export` returns, as ``kbindex export`` prints it, and a
        newline) to ``out`` piece by piece as the rows are read: memory stays small whatever the index
        holds. Returns the rows written per table."""
        return self._index.export_to(out)

    def export_counts(self) -> dict[str, int]:
        """The rows an export would hold, per table (counted, not read)."""
        return self._index.export_counts()

    def import_(self, data: Any, force: bool = False) -> ImportResult:
        require_role(self.conn, "curator", "import")   # it replaces everyone's history, feedback and learning
        return self._index.import_(data, force)

    def import_file(self, path: str | os.PathLike[str], force: bool = False) -> ImportResult:
        """:meth:`import_` of an export file: UTF-8 JSON (a binary, non-UTF-8 or invalid file is refused
        clearly, before anything is written)."""
        from kb_indexer.index.markdown import opened_file  # lazy: the file reader stays off the cold search path
        from kb_indexer.jsonfile import read_object  # lazy: as the file reader

        with opened_file(Path(path)) as fd:   # its tables stay in the file: read a row at a time
            return self.import_(read_object(fd, str(path), "tables"), force=force)

    def llm_client(self, options: LLMOptions | None = None) -> LLMClient:
        """An LLM client for ``options`` (None: the configured backend) whose answers are cached in this
        index: what a front end that talks to a model (chat) uses."""
        from kb_indexer.llm.structured import LLMClient  # lazy: the LLM layer loads only for a conversation

        return LLMClient.from_options(options, self.conn)

    def db_stats(self) -> DbStatsResult:
        from kb_indexer.store.stats import db_stats  # lazy: the sparse index module stays off the cold search path
        return cast("DbStatsResult", db_stats(self.conn, str(self.db_path), str(self.kb_root)))
