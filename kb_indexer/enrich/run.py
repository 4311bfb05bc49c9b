"""`kbindex enrich`: generate and merge keywords files, then index them, in batches.

Per document: read it and its keywords file (a broken keywords file is reported and left alone, unless
only the parts enrich generated are invalid: those are replaced), skip it when its
``generated.source_hash`` says it was enriched as it is now (so an interrupted run goes on where it
stopped), generate (one LLM call, or the statistical extractor), drop what a keywords file must not hold
(:func:`kb_indexer.index.generated.drop_invalid`: what enrich writes, sync reads), merge
(:mod:`kb_indexer.index.generated`: a person's keywords, title and summary are kept), write
``<doc>.keywords.json`` (:mod:`kb_indexer.safe_write`: atomically, never through or over a symlink) and
index it. A batch writes its files, then indexes them in one transaction. One failing document is
reported and skipped.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kb_indexer.enrich.keyphrases import CorpusStats, extract, lead_summary
from kb_indexer.enrich.source import Source, read_source
from kb_indexer.errors import KbError, UsageError, ValidationError
from kb_indexer.index.generated import Generated, drop_invalid, merge
from kb_indexer.index.loader import load_document
from kb_indexer.index.membership import excluded_reason, is_document_name
from kb_indexer.index.paths import default_keywords_rel, keywords_path_for, to_relative
from kb_indexer.index.reader import FILE_ERRORS
from kb_indexer.index.walk import scan
from kb_indexer.safe_write import write_atomic
from kb_indexer.store import fulltext
from kb_indexer.store.connection import transaction
from kb_indexer.store.documents import KeywordIds, upsert_document
from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection

BATCH = 200            # documents written and indexed per transaction
STATS_SAMPLE = 5000    # indexed documents read for the corpus statistics (every k-th, when there are more)
Progress = Callable[[int, int], None]


@dataclass
class Settings:
    dry_run: bool = False
    write: bool = True
    force: bool = False
    missing_only: bool = False


def targets(conn: Connection, root: Path, files: list[str] | None, all_: bool,
            missing_only: bool) -> list[str]:
    """The documents to enrich (relative paths); a path outside the KB root is refused."""
    if files and all_:
        raise UsageError("give FILES or --all, not both")
    if not files and not all_ and not missing_only:
        raise UsageError("say which documents: FILES, --all or --missing-only; e.g. `kbindex enrich --missing-only "
                         "--no-llm` (the documents without a person's keywords, no LLM), `kbindex enrich "
                         "notes/a.md` or `kbindex enrich --all`")
    if files:
        out = []
        for f in files:
            rel = to_relative(root, f)
            reason = excluded_reason(rel)
            if reason is not None or not is_document_name(Path(rel).name):
                raise ValidationError(f"{rel} is not a document of the knowledge base"
                                      + (f": {reason}" if reason else " (a markdown file)"))
            out.append(rel)
        return list(dict.fromkeys(out))

    return sorted(scan(root, "").files)


def corpus_stats(conn: Connection, sources: list[Source]) -> CorpusStats:
    """Document frequencies over the indexed documents (a sample of STATS_SAMPLE at most) and the
    documents being enriched that are not indexed yet."""
    stats = CorpusStats()
    total = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    step = max(1, -(-total // STATS_SAMPLE))
    indexed = set()
    for fp, title, body in fulltext.titled_texts(conn, step):
        indexed.add(fp)
        stats.add(f"{title} . {body}")
    for src in sources:
        if src.rel not in indexed:
            stats.add(f"{src.title} . {src.body}")
    return stats


def statistical(src: Source, stats: CorpusStats, fallback: str | None = None) -> Generated:
    found = extract(src.body, src.title, stats)
    return Generated(method="statistical", keywords=[(k.keyword, k.category) for k in found],
                     summary=lead_summary(src.lead) or None, source_hash=src.source_hash, fallback=fallback)


def run(conn: Connection, root: Path, rels: list[str], settings: Settings, llm: Any,
        progress: Progress | None = None) -> dict[str, Any]:
    """Enrich ``rels``; ``llm`` is an :class:`kb_indexer.enrich.api.LlmEnricher` (or one that never asks)."""
    started = time.perf_counter()
    explicit = _explicit_keywords_files(conn)
    entries: list[dict[str, Any]] = []
    sources = _read_all(root, rels, explicit, settings, entries)
    stats = corpus_stats(conn, [s for s in sources.values() if s is not None])
    done = 0
    batch: list[tuple[Source, dict[str, Any], dict[str, Any]]] = []
    for rel in rels:
        src = sources.get(rel)
        if src is not None:
            gen = llm.generate(src) or statistical(src, stats, llm.fallback_reason)
            dropped = drop_invalid(gen)
            data = merge(src.existing, src.validated, rel, gen)
            entry = _entry(rel, "would_enrich" if settings.dry_run else "enriched", gen, data, src)
            entry["dropped"] = dropped
            entries.append(entry)
            batch.append((src, data, entry))
        done += 1
        if len(batch) >= BATCH or done == len(rels):
            _commit(conn, root, batch, settings)
            batch = []
        if progress:
            progress(done, len(rels))
    order = {rel: i for i, rel in enumerate(rels)}
    entries.sort(key=lambda e: order.get(e["filepath"], len(order)))
    return _report(entries, settings, time.perf_counter() - started)


def _explicit_keywords_files(conn: Connection) -> set[str]:
    """Documents given their keywords file with `add --keywords` (enrich writes only the default one)."""
    return {fp for fp, kf in conn.execute("SELECT filepath, keywords_file FROM documents WHERE keywords_file "
                                          "IS NOT NULL") if kf != default_keywords_rel(fp)}


def _read_all(root: Path, rels: list[str], explicit: set[str], settings: Settings,
              entries: list[dict[str, Any]]) -> dict[str, Source | None]:
    """Each document read, or None with its entry (failed, skipped, unchanged) added to ``entries``."""
    out: dict[str, Source | None] = {}
    for rel in rels:
        out[rel] = None
        if rel in explicit:
            entries.append({"filepath": rel, "action": "skipped",
                            "reason": "indexed with a keywords file given by `add --keywords`"})
            continue
        try:
            src = read_source(root, rel)
        except KbError as exc:
            entries.append({"filepath": rel, "action": "failed", "error": exc.message})
            continue
        except FILE_ERRORS as exc:
            entries.append({"filepath": rel, "action": "failed", "error": f"{type(exc).__name__}: {exc}"})
            continue
        if settings.missing_only and src.has_keywords:
            entries.append({"filepath": rel, "action": "skipped", "reason": "has keywords"})
        elif not settings.force and src.enriched_hash == src.source_hash:
            entries.append({"filepath": rel, "action": "unchanged", "reason": _unchanged_reason(src)})
        else:
            out[rel] = src
    return out


def _unchanged_reason(src: Source) -> str:
    """Enriched as it is now, and how (a run with an LLM after a --no-llm one changes nothing without --force)."""
    mark = (src.existing or {}).get("generated")
    method = mark.get("method") if isinstance(mark, dict) else None
    how = f"by the {'LLM' if method == 'llm' else 'statistical extractor'}; " if method in ("llm", "statistical") else ""
    return f"enriched as it is now ({how}--force writes it again)"


def _entry(rel: str, action: str, gen: Generated, data: dict[str, Any], src: Source) -> dict[str, Any]:
    mark = data["generated"]
    return {"filepath": rel, "action": action, "method": gen.method, "fallback": gen.fallback,
            "model": gen.model, "title": data.get("title"), "summary": data.get("summary"),
            "generated_keywords": list(mark["keywords"]),
            "kept_keywords": [k for k in data["keywords"] if k not in set(mark["keywords"])],
            "questions": list(gen.questions), "keywords_file": default_keywords_rel(rel),
            "replaced_invalid": src.replaces_invalid}


def _commit(conn: Connection, root: Path, batch: list[Any], settings: Settings) -> None:
    """Write the batch's keywords files, then index its documents in one transaction."""
    if settings.dry_run or not batch:
        return
    ready = []
    for src, data, entry in batch:
        try:
            if settings.write:
                write_json(keywords_path_for(root / src.rel), data, root)
            ready.append((src, data, entry))
        except KbError as exc:
            entry.update(action="failed", error=exc.message)
        except OSError as exc:
            entry.update(action="failed", error=f"cannot write {entry['keywords_file']}: {exc.strerror or exc}")
    ids = KeywordIds(conn)
    with transaction(conn):
        for src, data, entry in ready:
            try:
                doc = load_document(root, src.rel, lenient=True)
            except (KbError, *FILE_ERRORS) as exc:
                entry.update(action="failed", error=getattr(exc, "message", str(exc)))
                continue
            if not settings.write:
                _in_index_only(doc, data)
            upsert_document(conn, ids, filepath=doc.filepath, title=doc.title, summary=doc.summary,
                            body=doc.body, keywords=doc.keywords, content_hash=doc.content_hash,
                            stat_sig=doc.stat_sig, keywords_file=doc.keywords_file)
    if not settings.write:
        for _, _, entry in ready:
            entry["keywords_file"] = None


def _in_index_only(doc: Any, data: dict[str, Any]) -> None:
    """``--no-write``: the merged keywords go to the index only (the files on disk stay as they are)."""
    generated = {normalize_keyword(k) for k in data["generated"]["keywords"]}
    category = {normalize_keyword(k): cat for cat, kws in data["categories"].items() for k in kws}
    doc.keywords = [(k, category.get(normalize_keyword(k)), "generated" if normalize_keyword(k) in generated
                     else "file") for k in data["keywords"]]
    doc.title = data.get("title") or doc.title
    doc.summary = data.get("summary") or doc.summary


def write_json(path: Path, data: dict[str, Any], root: Path | None = None) -> None:
    """Atomically, through no symlink (:mod:`kb_indexer.safe_write`); ``root``: the knowledge base the file
    must stay in (for a keywords file)."""
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", root=root)


def _report(entries: list[dict[str, Any]], settings: Settings, seconds: float) -> dict[str, Any]:
    counts = {a: 0 for a in ("enriched", "would_enrich", "unchanged", "skipped", "failed")}
    methods = {"llm": 0, "statistical": 0}
    for e in entries:
        counts[e["action"]] += 1
        if e.get("method"):
            methods[e["method"]] += 1
    done = counts["enriched"] + counts["would_enrich"]
    return {"documents": entries, "count": len(entries), **counts, "methods": methods,
            "dry_run": settings.dry_run, "written": settings.write and not settings.dry_run,
            "seconds": round(seconds, 3), "docs_per_second": round(done / seconds, 1) if seconds > 0 else None}
