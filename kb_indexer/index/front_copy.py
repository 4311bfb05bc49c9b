"""What ``kbindex enrich`` copied from a note's front matter into the keywords file it wrote, kept current.

A keywords file is read instead of its note's front matter (docs/knowledge-base-files.md), so the file enrich
writes for a note with front matter starts from the front matter's keywords, title and summary. It records
what it copied in the file's ``generated`` object::

    "generated": {..., "front_matter": {"keywords": ["baking", "sourdough"], "title": "Sourdough", "summary": null}}

Sync and enrich read such a file with the copies replaced by the front matter as it is now
(:func:`current`): a tag added there is indexed, one taken out there goes, a new title or summary shows, and
over a generated one too. What a person wrote into the file itself stays: a keyword it does not list as
copied, a title or summary edited in the file. Without the record (a file an earlier version wrote, or a
person's), the file is read as it is. A front matter that cannot be read changes nothing (``None``).
"""

from __future__ import annotations

from typing import Any

from kb_indexer.errors import ValidationError
from kb_indexer.index.generated import COPIED, MARKER, copied_norms, generated_norms, marker
from kb_indexer.index.markdown import front_matter_keywords, front_matter_summary, front_matter_text
from kb_indexer.limits import check_keyword
from kb_indexer.text import normalize_keyword

RECORD = COPIED


def copied(fm: dict[str, Any]) -> dict[str, Any]:
    """The record of what a keywords file starts from: the front matter's keywords (once each; one over the
    limits left out, as sync leaves it out), title and summary."""
    seen: dict[str, str] = {}
    for kw in front_matter_keywords(fm):
        try:
            check_keyword(kw, "a keyword in the front matter")
        except ValidationError:
            continue
        if normalize_keyword(kw):
            seen.setdefault(normalize_keyword(kw), kw)
    return {"keywords": list(seen.values()), "title": front_matter_text(fm, "title"),
            "summary": front_matter_summary(fm)}


def current(data: Any, fm: dict[str, Any] | None) -> Any:
    """``data`` (a keywords file's) with what enrich copied from the front matter replaced by the front matter
    ``fm`` as it is now; ``data`` itself when it records no copy or ``fm`` is None."""
    mark = marker(data)
    record = mark.get(RECORD)
    if fm is None or not isinstance(record, dict) or not isinstance(data.get("keywords"), list):
        return data
    now = copied(fm)
    out, mark = dict(data), dict(mark)
    _keywords(out, mark, record, now["keywords"])
    for key in ("title", "summary"):
        value, was = out.get(key), record.get(key)
        if now[key] and (not (isinstance(value, str) and value.strip()) or mark.get(key) is True or value == was):
            out[key], mark[key] = now[key], False   # the front matter's, over a copy, a generated one or none
        elif was is not None and value == was and key == "title":   # a copy of what the front matter dropped
            out.pop("title", None)
        elif was is not None and value == was:
            out["summary"] = ""
    mark[RECORD] = now
    out[MARKER] = mark
    return out


def _keywords(out: dict[str, Any], mark: dict[str, Any], record: dict[str, Any], now: list[str]) -> None:
    """The copied keywords of ``out`` replaced by ``now``, first; a generated keyword now in the front matter
    becomes the front matter's."""
    was = copied_norms({COPIED: record})
    fresh = {normalize_keyword(k) for k in now}

    def kept(k: Any) -> bool:
        return not isinstance(k, str) or normalize_keyword(k) not in was | fresh

    out["keywords"] = now + [k for k in out["keywords"] if kept(k)]
    if isinstance(out.get("categories"), dict):   # a keyword taken out of the front matter leaves its category
        gone = was - fresh
        out["categories"] = {cat: [k for k in kws if not (isinstance(k, str) and normalize_keyword(k) in gone)]
                             if isinstance(kws, list) else kws for cat, kws in out["categories"].items()}
    if fresh & generated_norms(out) and isinstance(mark.get("keywords"), list):
        mark["keywords"] = [k for k in mark["keywords"] if not (isinstance(k, str) and normalize_keyword(k) in fresh)]
