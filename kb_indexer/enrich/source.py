"""A document as enrichment sees it: its text, its keywords file (or front matter) and its hash."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb_indexer.errors import ValidationError
from kb_indexer.index.files import is_there, load_keywords_file, validate_keywords_data
from kb_indexer.index import front_copy
from kb_indexer.index.generated import MARKER, generated_norms, marker, without_generated
from kb_indexer.index.markdown import (front_matter_keywords, front_matter_summary, front_matter_text, parse_markdown,
                                      read_document_text)
from kb_indexer.index.paths import keywords_path_for
from kb_indexer.text import normalize_keyword


@dataclass
class Source:
    rel: str
    text: str
    body: str
    title: str
    source_hash: str                        # sha1 of the markdown file
    existing: dict[str, Any] | None         # the keywords file's data (or the front matter's fields)
    validated: dict[str, Any] | None        # the same, validated (keywords with categories)
    has_keywords: bool                      # a person gave keywords (keywords file or front matter)
    enriched_hash: str | None               # the source_hash of the last enrichment, if any
    replaces_invalid: str | None = None     # what was wrong with the keywords file's generated parts
    lead: str = ""                          # the first paragraph of the body (the index's default summary)


def read_source(root: Path, rel: str) -> Source:
    """Read ``rel``; a bad document or keywords file raises ValidationError (the document is skipped)."""
    md = root / rel
    text, raw, _ = read_document_text(md, rel, root=root)
    parsed = parse_markdown(text)
    fm = parsed.front_matter
    kw_path = keywords_path_for(md)
    existing = validated = replaces = None
    if is_there(kw_path):
        existing, validated, replaces = _keywords_file(root, kw_path, None if parsed.front_matter_error else fm)
    elif parsed.front_matter_error:  # the keywords file written would hide the front matter's keywords
        raise ValidationError(f"{rel}: {parsed.front_matter_error}; fix it, then enrich the document")
    else:
        existing, validated = _front_matter_as_file(rel, fm)
    mark = marker(existing)
    generated = generated_norms(existing)
    human = [k for k, _ in (validated or {}).get("keywords", []) if normalize_keyword(k) not in generated]
    title = parsed.title or front_matter_text(fm, "title") or Path(rel).stem.replace("-", " ").replace("_", " ")
    return Source(rel=rel, text=text, body=parsed.body, title=title,
                  source_hash=hashlib.sha1(raw).hexdigest(), existing=existing, validated=validated,
                  has_keywords=bool(human), enriched_hash=mark.get("source_hash") if mark and not replaces else None,
                  replaces_invalid=replaces, lead=parsed.summary or "")


def _keywords_file(root: Path, kw_path: Path, fm: dict[str, Any] | None) -> tuple[Any, dict[str, Any], str | None]:
    """The keywords file's data (what it copied from the front matter ``fm`` as it is now), validated, and what
    was wrong with it when only its generated parts were (enrich wrote them, and replaces them; the rest, a
    person's, must be valid). A file that is not JSON, not enrich's, or invalid in a person's part raises: it
    is reported and left alone."""
    existing, _ = load_keywords_file(root, kw_path, kw_path.name)
    existing = front_copy.current(existing, fm)
    try:
        return existing, validate_keywords_data(existing, kw_path.name), None
    except ValidationError as exc:
        if not marker(existing):
            raise
        try:
            return existing, validate_keywords_data(without_generated(existing), kw_path.name), exc.message
        except ValidationError:
            raise exc from None


def _front_matter_as_file(rel: str, fm: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Front-matter keywords, title and summary are a person's: a keywords file written for the document
    (which the loader then reads instead of the front matter) starts from them, and records them as copied
    (:mod:`kb_indexer.index.front_copy`: a later change of the front matter replaces them)."""
    first: dict[str, str] = {}
    for k in front_matter_keywords(fm):
        first.setdefault(normalize_keyword(k), k)
    keywords = list(first.values())
    title, summary = front_matter_text(fm, "title"), front_matter_summary(fm)
    if not (keywords or title or summary):
        return None, None
    data: dict[str, Any] = {"filepath": rel, "summary": summary or "", "keywords": keywords}
    if title:
        data["title"] = title
    validated = validate_keywords_data(data, f"{rel} (front matter)")
    data[MARKER] = {front_copy.RECORD: front_copy.copied(fm)}
    return data, validated
