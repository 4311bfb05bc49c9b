"""Relevance judgements for ``kbindex eval``: a BEIR queries file with its qrels, or the index's own feedback.

BEIR layout: ``queries.jsonl``, one ``{"_id", "text"}`` object a line; a qrels file of ``query-id<TAB>corpus-id
<TAB>score`` lines under a header line (TREC's ``query-id 0 corpus-id score`` is read too). A folder holding
``queries.jsonl`` stands for both, its qrels in ``qrels/test.tsv`` (BEIR's downloads) or ``qrels.tsv``.
A score above 0 is a relevance grade; 0 or below judges the document not relevant.

A corpus id names an indexed document (:func:`documents_of`) by its path (``notes/a.md``), its path
without ``.md`` (``notes/a``), or else its file name without ``.md`` when one document has it (``12`` for
``12.md``, the way ``bench/cranfield.py`` writes a BEIR corpus). A relevant id that names no document
stays a relevant document that no result can be: the question's ideal ranking and its recall count it.

Feedback: every recorded question with a helpful mark is a question; a document marked helpful (by more
askers than marked it not helpful) is relevant with grade 1, one marked not helpful is judged not relevant.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from kb_indexer.errors import KbError, NotFoundError, UsageError, ValidationError
from kb_indexer.index.markdown import opened_file
from kb_indexer.search.question import check_question
from kb_indexer.store.dbapi import Connection

FEEDBACK = "feedback"          # --qrels feedback: the index's own marks
QUERIES_FILE = "queries.jsonl"
QRELS_FILES = ("qrels/test.tsv", "qrels.tsv")
MAX_SHOWN_IDS = 10             # unmatched and ambiguous ids named in the result (all are counted)
_SUFFIXES = (".md", ".markdown")


@dataclass
class Question:
    """One judged question: what is asked, and ``grades`` (document key -> grade > 0)."""

    id: str
    text: str
    grades: dict[str, int]
    keywords: list[str] | None = None
    context: str | None = None


@dataclass
class Judgements:
    source: str                          # "beir" or "feedback"
    questions: list[Question]            # the judged ones (at least one relevant document), in file order
    unjudged: int = 0                    # questions without a relevant document: skipped
    without_text: int = 0                # judged query ids the queries file does not hold: skipped
    files: dict[str, str | None] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)    # relevant corpus ids naming no document
    ambiguous: list[str] = field(default_factory=list)    # relevant corpus ids naming several documents


def unmatched_key(corpus_id: str) -> str:
    """The key of a relevant id that names no document: no result's path is ever equal to it."""
    return "\0" + corpus_id


# -- BEIR files ----------------------------------------------------------------------------------------------
def beir_paths(queries: str | None, qrels: str | None) -> tuple[Path, Path]:
    """The queries file and qrels file that ``--queries`` and ``--qrels`` name (a folder: its BEIR files)."""
    if not queries:
        raise UsageError("give --queries (a BEIR queries.jsonl, or a BEIR folder), or --qrels feedback to judge "
                         "by the index's own feedback marks")
    q = Path(queries)
    if q.is_dir():
        folder, q = q, q / QUERIES_FILE
        if not q.is_file():
            raise NotFoundError(f"File not found: {q} (a BEIR folder holds {QUERIES_FILE})")
        if not qrels:
            found = [folder / name for name in QRELS_FILES if (folder / name).is_file()]
            if not found:
                raise NotFoundError(f"No qrels in {folder}: looked for {' and '.join(QRELS_FILES)} (name the file "
                                    "with --qrels, e.g. --qrels " + str(folder / "qrels" / "dev.tsv") + ")")
            return q, found[0]
    if not qrels:
        raise UsageError("give --qrels FILE (query-id, corpus-id, score) with a queries file, or --qrels feedback")
    return q, Path(qrels)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a UTF-8 text file, blank lines left out; a file that is not text is
    ``invalid_input`` naming the line."""
    with opened_file(path) as fd, os.fdopen(os.dup(fd), "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if b"\x00" in raw:
                raise ValidationError(f"{path} line {n}: a NUL byte (a binary file?); judgements are UTF-8 text")
            try:
                text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError:
                raise ValidationError(f"{path} line {n} is not valid UTF-8") from None
            if text.strip():
                yield n, text.rstrip("\r\n")


def read_queries(path: Path) -> dict[str, str]:
    """``{query id: question}`` of a BEIR queries file."""
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for n, line in _lines(path):
        try:
            item = json.loads(line)
        except (ValueError, RecursionError) as exc:   # RecursionError: nested too deep
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
            raise ValidationError(f"{path} line {n} is not a JSON object: {reason} (BEIR queries are one "
                                  '{"_id": ..., "text": ...} a line)') from None
        if not isinstance(item, dict) or not isinstance(item.get("_id"), (str, int)) or isinstance(item["_id"], bool) \
                or not isinstance(item.get("text"), str):
            raise ValidationError(f'{path} line {n}: a query is {{"_id": ..., "text": "..."}} (a string or number '
                                  "id and a text)")
        qid, text = str(item["_id"]), item["text"]
        if qid in first:
            raise ValidationError(f"{path} line {n}: query id {qid!r} again (first on line {first[qid]})")
        try:
            check_question(text, None)
        except UsageError as exc:
            raise ValidationError(f"{path} line {n}: {exc.message}") from None
        first[qid], out[qid] = n, text
    return out


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``{query id: {corpus id: score}}`` of a qrels file (BEIR's TSV, or TREC's four columns)."""
    out: dict[str, dict[str, int]] = {}
    for n, line in _lines(path):
        cols = line.split("\t") if "\t" in line else line.split()
        if len(cols) == 4:
            cols = [cols[0], cols[2], cols[3]]     # TREC: query-id iteration corpus-id score
        if len(cols) != 3 or not all(c.strip() for c in cols):
            raise ValidationError(f"{path} line {n}: expected query-id, corpus-id and score separated by tabs, "
                                  f"got {line[:80]!r}")
        qid, did, score = (c.strip() for c in cols)
        try:
            grade = int(score)
        except ValueError:
            if n == 1 and not out:
                continue                           # the header line (query-id, corpus-id, score)
            raise ValidationError(f"{path} line {n}: the score {score[:20]!r} is not a whole number") from None
        known = out.setdefault(qid, {})
        if did in known and known[did] != grade:
            raise ValidationError(f"{path} line {n}: query {qid!r} judges {did!r} again, with another score "
                                  f"({known[did]} and {grade})")
        known[did] = grade
    return out


def from_beir(conn: Connection, queries: str | None, qrels: str | None) -> Judgements:
    q_path, r_path = beir_paths(queries, qrels)
    texts, judged = read_queries(q_path), read_qrels(r_path)
    relevant_ids = {d for qid, grades in judged.items() if qid in texts for d, g in grades.items() if g > 0}
    docs, ambiguous = documents_of(conn, relevant_ids)
    out = Judgements("beir", [], files={"queries": str(q_path), "qrels": str(r_path)})
    for qid, text in texts.items():
        grades = {docs.get(d, unmatched_key(d)): g for d, g in judged.get(qid, {}).items() if g > 0}
        if grades:
            out.questions.append(Question(qid, text, grades))
        else:
            out.unjudged += 1
    out.without_text = sum(1 for qid, g in judged.items() if qid not in texts and any(v > 0 for v in g.values()))
    out.unmatched = sorted(relevant_ids - set(docs) - set(ambiguous), key=_natural)
    out.ambiguous = sorted(ambiguous, key=_natural)
    return out


def _natural(value: str) -> tuple[int, int | str]:
    return (0, int(value)) if value.isdigit() else (1, value)


def documents_of(conn: Connection, ids: set[str]) -> tuple[dict[str, str], list[str]]:
    """``({corpus id: document path}, ids that several documents' file names match)``: each id matched by
    path, by path without ``.md``, else by a unique file name without ``.md``; the rest match nothing."""
    out: dict[str, str] = {}
    wanted = sorted(ids)
    guesses = {i: [i, *(i + s for s in _SUFFIXES)] for i in wanted}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        found = {r[0] for r in conn.execute("SELECT filepath FROM documents WHERE filepath IN "
                                            "(SELECT value FROM json_each(?))",
                                            (json.dumps([g for i in chunk for g in guesses[i]]),))}
        for i in chunk:
            path = next((g for g in guesses[i] if g in found), None)   # the id itself first
            if path is not None:
                out[i] = path
    left = ids - set(out)
    if not left:
        return out, []
    by_name: dict[str, list[str]] = {}
    for (path,) in conn.execute("SELECT filepath FROM documents"):
        name = path.rsplit("/", 1)[-1]
        stem = next((name[:-len(s)] for s in _SUFFIXES if name.endswith(s)), name)
        if stem in left:
            by_name.setdefault(stem, []).append(path)
    out.update({i: paths[0] for i, paths in by_name.items() if len(paths) == 1})
    return out, [i for i, paths in by_name.items() if len(paths) > 1]


# -- the index's own feedback --------------------------------------------------------------------------------
def from_feedback(conn: Connection) -> Judgements:
    """The recorded questions with helpful marks, as judged questions (see the module's docstring)."""
    marks: dict[int, dict[str, int]] = {}
    for qid, path, helpful, count in conn.execute(
            "SELECT query_id, filepath, SUM(helpful), COUNT(*) FROM query_feedback GROUP BY query_id, filepath "
            "ORDER BY query_id, filepath"):
        marks.setdefault(int(qid), {})[path] = 1 if 2 * int(helpful) > int(count) else 0
    if not marks:
        raise NotFoundError("No feedback recorded yet: `kbindex feedback QUERY_ID --helpful FILE` marks what helped "
                            "(or judge with a BEIR file pair: --queries FILE --qrels FILE)")
    paths = sorted({p for grades in marks.values() for p, g in grades.items() if g > 0})
    indexed: set[str] = set()
    for start in range(0, len(paths), 500):
        indexed.update(r[0] for r in conn.execute("SELECT filepath FROM documents WHERE filepath IN "
                                                  "(SELECT value FROM json_each(?))",
                                                  (json.dumps(paths[start:start + 500]),)))
    out = Judgements("feedback", [], files={"queries": None, "qrels": FEEDBACK})
    asked = _recorded(conn, sorted(marks))
    for qid, grades in marks.items():
        relevant = {p if p in indexed else unmatched_key(p): 1 for p, g in grades.items() if g > 0}
        if not relevant or qid not in asked:
            out.unjudged += 1
            continue
        text, keywords, context = asked[qid]
        out.questions.append(Question(str(qid), text, relevant, keywords, context))
    out.unmatched = [p for p in paths if p not in indexed]
    return out


def _recorded(conn: Connection, ids: list[int]) -> dict[int, tuple[str, list[str] | None, str | None]]:
    """``{query id: (question, keywords, context)}``: a query asked with keywords only is asked with its first
    attempt's keywords again."""
    out: dict[int, tuple[str, list[str] | None, str | None]] = {}
    for start in range(0, len(ids), 500):
        chunk = json.dumps(ids[start:start + 500])
        rows = conn.execute(
            "SELECT q.id, q.question, q.context, (SELECT a.keywords FROM query_attempts a WHERE a.query_id = q.id "
            "ORDER BY a.id LIMIT 1) AS keywords FROM queries q WHERE q.id IN (SELECT value FROM json_each(?))",
            (chunk,)).fetchall()
        for qid, question, context, keywords in rows:
            words = _keywords(keywords) if not (question or "").strip() else None
            if (question or "").strip() or words:
                out[int(qid)] = (question or "", words, context or None)
    return out


def _keywords(raw: str | None) -> list[str] | None:
    try:
        words = json.loads(raw or "[]")
    except ValueError:
        return None
    if not isinstance(words, list):
        return None
    return [w for w in words if isinstance(w, str) and w.strip()] or None


def judgements(conn: Connection, qrels: str | None, queries: str | None) -> Judgements:
    """The judgements ``--queries`` and ``--qrels`` name (``qrels`` ``feedback``: the index's marks)."""
    if qrels == FEEDBACK:
        if queries:
            raise UsageError("--qrels feedback judges the recorded questions: leave --queries out")
        return from_feedback(conn)
    try:
        return from_beir(conn, queries, qrels)
    except KbError:
        raise
    except OSError as exc:   # a folder that cannot be listed, a path too long
        raise ValidationError(f"Cannot read {exc.filename or queries}: {exc.strerror or exc}") from None


def describe(j: Judgements) -> dict[str, Any]:
    """The result's ``judgements`` object."""
    return {"source": j.source, **j.files, "questions": len(j.questions), "unjudged": j.unjudged,
            "without_text": j.without_text, "relevant": sum(len(q.grades) for q in j.questions),
            "unmatched": len(j.unmatched), "unmatched_ids": j.unmatched[:MAX_SHOWN_IDS],
            "ambiguous": len(j.ambiguous), "ambiguous_ids": j.ambiguous[:MAX_SHOWN_IDS]}
