"""Turn a markdown file (plus its optional keywords file) into an indexable record."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from kb_indexer.errors import ValidationError
from kb_indexer.index import front_copy
from kb_indexer.index.files import is_there, load_json_file, load_keywords_file, validate_keywords_data
from kb_indexer.index.generated import generated_norms
from kb_indexer.index.markdown import (front_matter_keywords, front_matter_summary, front_matter_text, parse_markdown,
                                      read_document_text)
from kb_indexer.index.paths import default_keywords_rel, keywords_path_for, stat_sig, store_keywords_file
from kb_indexer.limits import check_keyword, max_doc_bytes
from kb_indexer.text import normalize_keyword


@dataclass
class LoadedDocument:
    filepath: str
    title: str
    summary: str
    body: str
    keywords: list[tuple[str, str | None, str]]
    content_hash: str
    stat_sig: str
    keywords_file: str | None
    warnings: list[str] = field(default_factory=list)
    problems: list[dict[str, str]] = field(default_factory=list)  # {file, message}: for sync's errors
    text_hash: str | None = None  # of the markdown file alone: what pairs a renamed file with its document
    errors: list[str] = field(default_factory=list)  # the document is indexed all the same (its front matter)


def load_document(kb_root: Path, rel: str, keywords_file: Path | None = None, *,
                  lenient: bool = False) -> LoadedDocument:
    """Read and validate ``rel`` (relative to ``kb_root``); raises ValidationError on bad input.

    ``lenient`` (sync, enrich): a bad default keywords file (``<stem>.keywords.json``: not valid, not for
    this document, a symlink leading outside the root) does not stop the document from being indexed
    with its own title and front-matter keywords; the problem is in ``problems``. A keywords file given
    with ``add --keywords`` is always checked strictly."""
    md_path = kb_root / rel
    text, raw, warning = read_document_text(md_path, rel, root=kb_root)
    explicit = keywords_file is not None
    kw_path = keywords_file if keywords_file is not None else keywords_path_for(md_path)
    data = kw_data = kw_rel = None
    kw_raw = b""
    problems: list[dict[str, str]] = []
    parsed = parse_markdown(text)
    fm = parsed.front_matter
    if explicit or is_there(kw_path):  # a FIFO or folder there: a clear error
        try:
            data, kw_raw, kw_data = _keywords(kb_root, rel, kw_path, explicit,
                                              None if parsed.front_matter_error else fm)
            kw_rel = store_keywords_file(kb_root, kw_path) if explicit else default_keywords_rel(rel)
        except ValidationError as exc:
            if explicit or not lenient:
                raise
            problems.append({"file": default_keywords_rel(rel), "message": f"{exc.message}; {rel} is indexed "
                             "without it (its own title and front-matter keywords)"})
    errors = [parsed.front_matter_error] if parsed.front_matter_error else []
    stem_title = Path(rel).stem.replace("-", " ").replace("_", " ").strip().capitalize()
    if kw_data:
        title = kw_data["title"] or parsed.title or front_matter_text(fm, "title") or stem_title
        summary = kw_data["summary"] or front_matter_text(fm, "summary") or parsed.summary or ""
        generated = generated_norms(data)  # written by `kbindex enrich` (see kb_indexer.index.generated)
        keywords = [(kw, cat, "generated" if normalize_keyword(kw) in generated else "file")
                    for kw, cat in kw_data["keywords"]]
    else:
        title = front_matter_text(fm, "title") or parsed.title or stem_title
        summary = front_matter_summary(fm) or parsed.summary or ""
        keywords = []
        seen = set()
        for kw in front_matter_keywords(fm):
            try:
                check_keyword(kw, "a keyword in the front matter")
            except ValidationError as exc:  # that keyword is left out; the document is indexed all the same
                errors.append(f"{exc.message}; {rel} is indexed without it")
                continue
            norm = normalize_keyword(kw)
            if norm and norm not in seen:
                seen.add(norm)
                keywords.append((kw, None, "frontmatter"))
    text_digest = _text_digest(raw)  # the markdown alone: pairs a renamed file with its document (sync)
    digest = hashlib.sha1(raw + b"\0" + kw_raw).hexdigest()
    return LoadedDocument(
        filepath=rel, title=title, summary=summary, body=parsed.body, keywords=keywords,
        content_hash=digest, stat_sig=stat_sig(md_path, kw_path if kw_data else None), keywords_file=kw_rel,
        warnings=([warning] if warning else []) + (kw_data["warnings"] if kw_data else []), problems=problems,
        text_hash=text_digest,
        errors=errors,
    )


def text_hash(kb_root: Path, rel: str) -> str | None:
    """``LoadedDocument.text_hash`` of ``rel`` without loading it (None: it cannot be read)."""
    try:
        _, raw, _ = read_document_text(kb_root / rel, rel, root=kb_root)
    except (ValidationError, OSError):
        return None
    return _text_digest(raw)


def markdown_text(kb_root: Path, rel: str) -> str | None:
    """The markdown text of ``rel`` as sync reads it (None: it cannot be read)."""
    try:
        return read_document_text(kb_root / rel, rel, root=kb_root)[0]
    except (ValidationError, OSError):
        return None


def _text_digest(raw: bytes) -> str:
    return hashlib.sha1(raw + b"\0").hexdigest()


def _keywords(kb_root: Path, rel: str, kw_path: Path, explicit: bool,
              fm: dict[str, Any] | None) -> tuple[Any, bytes, dict[str, Any]]:
    """The keywords file's data (what enrich copied from the front matter ``fm`` as it is now:
    :mod:`kb_indexer.index.front_copy`), bytes and validated form."""
    if explicit:
        name = str(kw_path)
        data, raw = load_json_file(kw_path, name, limit=max_doc_bytes())
    else:
        name = kw_path.name
        data, raw = load_keywords_file(kb_root, kw_path, name)
    data = front_copy.current(data, fm)
    kw_data = validate_keywords_data(data, name)
    if not describes(kw_data["filepath"], rel):
        raise ValidationError(f"{name} describes {kw_data['filepath']!r}, not {rel!r} (its 'filepath' must be "
                              "the document's path relative to the knowledge-base root, or its file name)")
    return data, raw, kw_data


def describes(filepath: str, rel: str) -> bool:
    """Does a keywords file's ``filepath`` name the document ``rel``?

    The exact relative path (``./`` prefixes and backslashes aside), or, as older files do, just the
    document's file name; anything else (``../x/doc.md``, ``other/doc.md``) is refused.
    """
    for value in {filepath.strip(), filepath.strip().replace("\\", "/")}:   # a Windows separator, or a file
        while value.startswith("./"):                                       # name's own backslash (POSIX)
            value = value[2:]
        if value == rel or ("/" not in value and value == PurePosixPath(rel).name):
            return True
    return False
