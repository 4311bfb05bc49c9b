"""The automatic-indexing sub-API: ``kb.enrich`` of :class:`kb_indexer.api.KnowledgeBase` (built on first use).

    with KnowledgeBase.open() as kb:
        kb.enrich.documents(["notes/a.md"], use_llm=False)
        kb.enrich.sync()                       # sync, then enrich what needs it
        kb.enrich.suggest_similarities(min_score=0.6)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, cast

from kb_indexer.config import DbTarget
from kb_indexer.enrich.llm_enrich import ask
from kb_indexer.enrich.run import Settings, run, targets
from kb_indexer.enrich.source import Source
from kb_indexer.enrich.suggest_run import apply as apply_items, gather, write_output
from kb_indexer.errors import UsageError
from kb_indexer.index.generated import Generated
from kb_indexer.index.paths import to_relative
from kb_indexer.limits import check_finite
from kb_indexer.llm.base import LLMBadResponse, LLMError
from kb_indexer.llm.config import LLMOptions, is_configured
from kb_indexer.llm.structured import LLMClient
from kb_indexer.store.connection import transaction
from kb_indexer.store.errors import translating
from kb_indexer.text import now_iso
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from kb_indexer.llm.config import EmbedOptions
    from kb_indexer.results import EnrichResult, LlmReport, SuggestResult, SyncResult

Progress = Callable[[int, int], None]

NO_BACKEND = "no LLM backend configured (--llm-backend or KBINDEX_LLM_BACKEND)"


class Syncing(Protocol):
    """What enrichment needs of the facade: its connection, its root and its ``sync``."""

    conn: Connection
    db_path: DbTarget
    kb_root: Path

    def sync(self, directory: str | None = None, progress: Progress | None = None, *, embed: bool = False,
             embed_options: EmbedOptions | None = None, embed_progress: Progress | None = None,
             force: bool = False) -> SyncResult: ...


class LlmEnricher:
    """Asks the LLM per document, or says why not. After a failure that is not the answer's fault (the
    server is down, refuses the key, or took longer than the timeout) the rest of the run goes on with
    the statistical extractor instead of waiting for the server again for every document."""

    def __init__(self, conn: Connection, use_llm: bool, opts: LLMOptions | None = None, *,
                 dry_run: bool = False, client: LLMClient | None = None):
        self.client = client
        self.reason: str | None = None
        self.error: str | None = None
        self.used = self.failed = 0
        if client is None and not use_llm:
            self.reason = "--no-llm"
        elif client is None and not is_configured(opts):
            self.reason = NO_BACKEND
        elif client is None:
            self.client = LLMClient.from_options(opts, conn=None if dry_run else conn)  # dry run: no cache write
        self.fallback_reason: str | None = self.reason

    def generate(self, src: Source) -> Generated | None:
        """A :class:`kb_indexer.index.generated.Generated` from the LLM, or None (``fallback_reason`` says why)."""
        if self.client is None or self.reason:
            self.fallback_reason = self.reason
            return None
        try:
            answer = ask(self.client, src.rel, src.title, src.text)
        except LLMError as exc:
            self.failed += 1
            self.error = exc.message
            self.fallback_reason = f"LLM failed: {exc.message}"
            if not isinstance(exc, LLMBadResponse):
                self.reason = f"LLM unavailable since an earlier document: {exc.message}"
            return None
        self.used += 1
        return Generated(method="llm", keywords=answer["keywords"], source_hash=src.source_hash,
                         title=answer["title"], summary=answer["summary"], questions=answer["questions"],
                         backend=self.client.config.backend, model=answer["model"])

    def report(self) -> LlmReport:
        if self.client is None:
            return {"backend": None, "model": None, "used": False, "fallback": "statistical", "error": None,
                    "reason": self.reason}
        out = self.client.report(used=self.used > 0, fallback="statistical" if self.failed else None,
                                 error=self.error)
        out.update(documents=self.used, fallback_documents=self.failed, cache=self.client.cache_report())
        return cast("LlmReport", out)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class EnrichAPI:
    """Generated keywords and relations: documents, sync, suggest_similarities."""

    def __init__(self, kb: Syncing) -> None:
        self.kb = kb
        self.conn = kb.conn
        self.db_path = kb.db_path
        self.kb_root = kb.kb_root

    def documents(self, files: list[str] | None = None, *, all_: bool = False, missing_only: bool = False,
                  dry_run: bool = False, write: bool = True, use_llm: bool = True, llm: LLMOptions | None = None,
                  force: bool = False, progress: Progress | None = None,
                  client: LLMClient | None = None) -> EnrichResult:
        """Generate keywords (and with an LLM a title, summary and questions) for documents, merge them into
        their ``.keywords.json`` files and index them. ``llm``: :class:`kb_indexer.llm.config.LLMOptions`;
        ``client``: an LLM client to use instead (tests)."""
        rels = targets(self.conn, self.kb_root.resolve(), files, all_, missing_only)
        return self._enrich(rels, Settings(dry_run=dry_run, write=write, force=force, missing_only=missing_only),
                            use_llm, llm, progress, client)

    def _enrich(self, rels: list[str], settings: Settings, use_llm: bool, llm: LLMOptions | None,
                progress: Progress | None, client: LLMClient | None) -> EnrichResult:
        enricher = LlmEnricher(self.conn, use_llm, llm, dry_run=settings.dry_run, client=client)
        try:
            out = run(self.conn, self.kb_root.resolve(), rels, settings, enricher, progress)
        finally:
            enricher.close()
        out["llm"] = enricher.report()
        return cast("EnrichResult", out)

    def sync(self, directory: str | None = None, progress: Progress | None = None, *, use_llm: bool = True,
             llm: LLMOptions | None = None, client: LLMClient | None = None, embed: bool = False,
             embed_options: EmbedOptions | None = None, embed_progress: Progress | None = None,
             force: bool = False) -> SyncResult:
        """``sync`` (with its ``embed`` and ``force`` options), then enrich the documents that have no keywords
        of a person, and the changed ones whose keywords were generated (only their generated keywords are
        refreshed)."""
        started = now_iso()
        result = self.kb.sync(directory, progress, embed=embed, embed_options=embed_options,
                              embed_progress=embed_progress, force=force)
        prefix = "" if directory is None else to_relative(self.kb_root, directory).rstrip("/") + "/"
        prefix = "" if prefix in ("./", "/") else prefix
        rels = [fp for fp, updated, human, gen in self.conn.execute(
            "SELECT d.filepath, d.updated_at, "
            "EXISTS (SELECT 1 FROM document_keywords dk WHERE dk.document_id = d.id AND dk.source NOT IN "
            "('learned', 'generated')), "
            "EXISTS (SELECT 1 FROM document_keywords dk WHERE dk.document_id = d.id AND dk.source = 'generated') "
            "FROM documents d ORDER BY d.filepath")
            if fp.startswith(prefix) and ((not human and not gen) or (gen and updated >= started))]
        result["enrich"] = self._enrich(rels, Settings(), use_llm, llm, None, client)
        return result

    def suggest_similarities(self, *, apply: bool = False, min_score: float = 0.5, output: str | Path | None = None,
                             use_llm: bool = True, llm: LLMOptions | None = None,
                             client: LLMClient | None = None) -> SuggestResult:
        """Typed relations among the index's keywords, for review (see :mod:`kb_indexer.enrich.suggest`);
        ``apply`` imports them as learned items, ``output`` writes them as a similarities.json file."""
        if not 0 <= check_finite(min_score, "min_score (--min-score)") <= 1:
            raise UsageError(f"min_score (--min-score) must be between 0 and 1, got {min_score}")
        enricher = LlmEnricher(self.conn, use_llm, llm, client=client)
        try:
            suggestions, errors = gather(self.conn, enricher.client if not enricher.reason else None, min_score)
        finally:
            enricher.close()
        out: dict[str, Any] = {"suggestions": suggestions, "count": len(suggestions), "min_score": min_score,
                               "by_source": {}, "applied": 0, "output": None}
        for sug in suggestions:
            out["by_source"][sug["source"]] = out["by_source"].get(sug["source"], 0) + 1
        if output is not None:
            out["output"] = write_output(Path(output), suggestions)
        if apply:
            with transaction(self.conn):
                out["learned_ids"] = apply_items(self.conn, suggestions)
            out["applied"] = len(out["learned_ids"])
        enricher.used = 1 if enricher.client is not None and not errors else 0
        enricher.failed, enricher.error = len(errors), (errors[0] if errors else None)
        out["llm"] = enricher.report()
        return cast("SuggestResult", out)
