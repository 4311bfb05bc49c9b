"""Generated parts of a keywords file: the ``generated`` marker, and merging new ones in.

``kbindex enrich`` writes ``<doc>.keywords.json`` in the usual format plus one object naming what it
generated::

    "generated": {"method": "statistical" | "llm", "backend": ..., "model": ...,
                  "keywords": ["slipstream", ...], "title": false, "summary": true,
                  "questions": [...], "source_hash": "<sha1 of the document>", "fallback": null,
                  "categories": ["concepts", ...]}

Everything else in the file is a person's: a keyword not listed in ``generated.keywords`` is never
dropped, renamed or re-categorised, a title or summary not marked generated is kept, and so is a category
not listed in ``generated.categories`` (the ones enrich made), an empty one too. A later run
replaces only the generated parts (so a changed document gets fresh keywords). To adopt a generated
keyword, delete it from ``generated.keywords``: from then on it is yours. The loader stores generated
keywords with source ``generated`` (a lower tag weight, see :mod:`kb_indexer.store.documents`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kb_indexer.limits import (MAX_KEYWORD_CHARS, MAX_QUESTION_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS,
                               text_problem)
from kb_indexer.text import normalize_keyword

MARKER = "generated"
COPIED = "front_matter"   # the marker's record of what enrich copied from the front matter (index/front_copy.py)


def marker(data: Any) -> dict[str, Any]:
    """The ``generated`` object of a keywords file's data ({} when there is none or it is malformed)."""
    value = data.get(MARKER) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def copied_norms(mark: dict[str, Any]) -> set[str]:
    """The normalised keywords a marker records as copied from the note's front matter (none when the record, or
    its list, is malformed: a file's values are a person's to get wrong, never a reason for sync to fail)."""
    record = mark.get(COPIED)
    kws = record.get("keywords") if isinstance(record, dict) else None
    return {normalize_keyword(k) for k in kws if isinstance(k, str)} if isinstance(kws, list) else set()


def generated_norms(data: Any) -> set[str]:
    """The normalised keywords a keywords file marks as generated."""
    kws = marker(data).get("keywords")
    return {normalize_keyword(k) for k in kws if isinstance(k, str)} if isinstance(kws, list) else set()


@dataclass
class Generated:
    """What one enrichment produced for one document."""

    method: str                                  # "statistical" or "llm"
    keywords: list[tuple[str, str]]              # (keyword, category), best first
    source_hash: str
    title: str | None = None
    summary: str | None = None
    questions: list[str] = field(default_factory=list)
    backend: str | None = None
    model: str | None = None
    fallback: str | None = None                  # why the statistical extractor stood in for the LLM


def drop_invalid(gen: Generated) -> list[str]:
    """Take out of ``gen`` what a keywords file must not hold (a control character such as NUL, a text
    too long: :func:`kb_indexer.limits.text_problem`, the rule sync applies to keywords files), so that
    what enrich writes, sync reads; returns what was dropped and why."""
    dropped: list[str] = []

    def ok(what: str, value: str, limit: int) -> bool:
        problem = text_problem(value, limit)
        if problem:
            dropped.append(f"{what} {value[:40]!r} {problem}" if isinstance(value, str) else f"{what} {problem}")
        return problem is None

    gen.keywords = [(kw, cat) for kw, cat in gen.keywords if ok("keyword", kw, MAX_KEYWORD_CHARS)]
    gen.questions = [q for q in gen.questions if ok("question", q, MAX_QUESTION_CHARS)]
    if gen.title is not None and not ok("title", gen.title, MAX_TITLE_CHARS):
        gen.title = None
    if gen.summary is not None and not ok("summary", gen.summary, MAX_SUMMARY_CHARS):
        gen.summary = None
    return dropped


def without_generated(data: dict[str, Any]) -> dict[str, Any]:
    """A keywords file's data with what enrich generated taken out (its generated keywords, and the title
    and summary when marked generated): what a person wrote, to check on its own when the whole file is
    invalid because of a generated part."""
    generated = generated_norms(data)
    mark = marker(data)

    def persons(items: Any) -> Any:
        return [k for k in items if not (isinstance(k, str) and normalize_keyword(k) in generated)] \
            if isinstance(items, list) else items

    out = dict(data)
    out["keywords"] = persons(out.get("keywords"))
    if isinstance(out.get("categories"), dict):
        out["categories"] = {cat: persons(items) for cat, items in out["categories"].items()}
    if mark.get("title") is True:
        out.pop("title", None)
    if mark.get("summary") is True:
        out["summary"] = ""
    return out


#: The fields :func:`merge` writes; a field beside these is a person's.
WRITTEN_FIELDS = frozenset(("filepath", "title", "summary", "keywords", "categories", MARKER))


def only_generated(data: Any) -> bool:
    """Whether a keywords file holds nothing but what enrich generated: its marker, generated keywords in
    categories enrich made, a generated (or no) title and summary, no other field. Such a file goes with its
    note (:mod:`kb_indexer.index.orphans`); one with anything of a person's stays."""
    mark = marker(data)
    if not mark or set(data) - WRITTEN_FIELDS:
        return False
    person = without_generated(data)
    copies = copied_norms(mark)
    raw = mark.get(COPIED)
    copy: dict[str, Any] = raw if isinstance(raw, dict) else {}   # of the note's front matter: gone with it

    def persons(items: Any) -> list[Any]:
        """The items not copied from the front matter (a value that is no list is a person's, whole)."""
        if not isinstance(items, list):
            return [] if items is None else [items]
        return [k for k in items if not (isinstance(k, str) and normalize_keyword(k) in copies)]

    categories = person.get("categories")
    return (not persons(person.get("keywords"))
            and (categories is None or isinstance(categories, dict) and not any(map(persons, categories.values())))
            and not _human_categories(data.get("categories"), generated_norms(data) | copies, mark.get("categories"))
            and all(_blank(person.get(key)) or person.get(key) == copy.get(key) for key in ("title", "summary")))


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def merge(existing: dict[str, Any] | None, validated: dict[str, Any] | None, filepath: str,
          gen: Generated) -> dict[str, Any]:
    """The keywords-file data after replacing the generated parts of ``existing`` with ``gen``.

    ``validated`` is ``existing`` as :func:`kb_indexer.index.files.validate_keywords_data` returns it
    (the keywords with their categories). Unknown fields of ``existing`` are kept as they are.
    """
    old = dict(existing or {})
    old_mark = marker(old)
    old_gen = generated_norms(old)
    human = [(kw, cat) for kw, cat in (validated or {}).get("keywords", []) if normalize_keyword(kw) not in old_gen]
    taken = {normalize_keyword(kw) for kw, _ in human}
    fresh: list[tuple[str, str]] = []
    for kw, cat in gen.keywords:
        norm = normalize_keyword(kw)
        if norm and norm not in taken:
            taken.add(norm)
            fresh.append((kw, cat))
    categories = _human_categories(old.get("categories"), old_gen, old_mark.get("categories"))
    kept = set(categories)
    for kw, cat in human + fresh:
        if cat:
            categories.setdefault(cat, []).append(kw)
    out = dict(old)
    out["filepath"] = old.get("filepath") if isinstance(old.get("filepath"), str) and old["filepath"].strip() \
        else filepath
    title_generated = _choose(out, "title", gen.title, old_mark.get("title") is True)
    summary_generated = _choose(out, "summary", gen.summary, old_mark.get("summary") is True)
    out.setdefault("summary", "")
    out["keywords"] = [kw for kw, _ in human + fresh]
    out["categories"] = categories
    out[MARKER] = {
        "method": gen.method, "backend": gen.backend, "model": gen.model,
        "keywords": [kw for kw, _ in fresh], "title": title_generated, "summary": summary_generated,
        "questions": list(gen.questions), "source_hash": gen.source_hash, "fallback": gen.fallback,
        "categories": sorted(set(categories) - kept),   # the categories this run made (a person's are kept)
    }
    if isinstance(old_mark.get(COPIED), dict):   # what the file copied from the note's front matter
        out[MARKER][COPIED] = old_mark[COPIED]
    return out


def _human_categories(old: Any, generated: set[str], made: Any) -> dict[str, list[str]]:
    """The categories a person made, in their order, emptied to be filled again: every one an earlier run did
    not make (``made``: the marker's list); with a marker from before that list, each holding a keyword that
    was not generated, or none at all (an empty category is a person's, kept as such)."""
    if not isinstance(old, dict):
        return {}
    if isinstance(made, list):
        return {name: [] for name, kws in old.items() if isinstance(name, str) and isinstance(kws, list)
                and name not in made}
    return {name: [] for name, kws in old.items() if isinstance(name, str) and isinstance(kws, list)
            and (not kws or any(isinstance(k, str) and normalize_keyword(k) not in generated for k in kws))}


def _choose(out: dict[str, Any], key: str, new: str | None, was_generated: bool) -> bool:
    """Set ``out[key]`` to ``new`` unless a person wrote it; returns whether the value is generated."""
    current = out.get(key)
    human = isinstance(current, str) and current.strip() and not was_generated
    if human:
        return False
    if new:
        out[key] = new
        return True
    if was_generated and key == "title":
        out.pop(key, None)  # the old generated title goes; the document's own heading shows again
    elif was_generated:
        out[key] = ""
    return False
