"""Validation of ``*.keywords.json`` and ``similarities.json`` files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kb_indexer.errors import ValidationError
from kb_indexer.index.markdown import read_text_file
from kb_indexer.limits import MAX_JSON_FILE_BYTES, check_keyword, max_doc_bytes, parse_json
from kb_indexer.store.similarities import validate_relation
from kb_indexer.text import normalize_keyword


def load_json_file(path: Path, display: str | None = None, *, limit: int = MAX_JSON_FILE_BYTES,
                   root: Path | None = None) -> tuple[Any, bytes]:
    """A JSON file (keywords file, similarities file) as data, refused cleanly when over ``limit`` bytes,
    not JSON, or nested too deep. ``root``: the knowledge base it must stay in."""
    name = display or str(path)
    text, raw = read_text_file(path, name, limit=limit, root=root)
    return parse_json(text, name), raw


def is_there(path: Path) -> bool:
    """Whether anything is at ``path``, a dangling symlink included (one ``lstat``)."""
    try:
        os.lstat(path)
        return True
    except (OSError, ValueError):
        return False


def load_keywords_file(kb_root: Path, path: Path, display: str) -> tuple[Any, bytes]:
    """A document's own ``<stem>.keywords.json`` as data, refused (as a document would be, see
    :mod:`kb_indexer.index.walk`) when it, or a folder on its way, is a symlink resolving outside the
    knowledge-base root: opened from the root one component at a time (:mod:`kb_indexer.beneath`), so a
    link swapped in after a check is caught by the open itself."""
    return load_json_file(path, display, limit=max_doc_bytes(), root=kb_root)


KEYWORDS_FILE_REQUIRED = ("filepath", "summary", "keywords")


def validate_keywords_data(data: Any, name: str) -> dict[str, Any]:
    """Check a keywords file; returns {filepath, title, summary, keywords: [(kw, category)], warnings}.

    A keyword listed under ``categories`` but missing from ``keywords`` (the design document's own
    example does this) is added to the keywords, after them, with a warning naming it."""
    if not isinstance(data, dict):
        raise ValidationError(f"{name}: the top level must be a JSON object")
    missing = [key for key in KEYWORDS_FILE_REQUIRED if key not in data]
    if missing:
        fields = " and ".join(", ".join(f"'{k}'" for k in missing).rsplit(", ", 1))
        raise ValidationError(f"{name}: missing required field{'s' if len(missing) > 1 else ''} {fields} (a "
                              "keywords file has filepath, summary and keywords)")
    if not isinstance(data["filepath"], str) or not data["filepath"].strip():
        raise ValidationError(f"{name}: 'filepath' must be a non-empty string")
    if not isinstance(data["summary"], str):
        raise ValidationError(f"{name}: 'summary' must be a string")
    title = data.get("title")
    if title is not None and not isinstance(title, str):
        raise ValidationError(f"{name}: 'title' must be a string")
    kws = data["keywords"]
    if not isinstance(kws, list) or not all(isinstance(k, str) for k in kws):
        raise ValidationError(f"{name}: 'keywords' must be a list of strings")
    seen: dict[str, str] = {}
    for kw in kws:
        check_keyword(kw, f"{name}: a keyword in 'keywords'")
        norm = normalize_keyword(kw)
        if not norm:
            raise ValidationError(f"{name}: empty keyword in 'keywords'")
        if norm in seen:
            raise ValidationError(f"{name}: duplicate keyword {kw!r} (same as {seen[norm]!r} after normalisation)")
        seen[norm] = kw
    categories = data.get("categories") or {}
    if not isinstance(categories, dict):
        raise ValidationError(f"{name}: 'categories' must be an object mapping a category to a list of keywords")
    category_of: dict[str, str] = {}
    added: list[str] = []
    warnings: list[str] = []
    for cat, members in categories.items():
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise ValidationError(f"{name}: categories.{cat} must be a list of strings")
        for m in members:
            check_keyword(m, f"{name}: a keyword in categories.{cat}")
            norm = normalize_keyword(m)
            if not norm:
                raise ValidationError(f"{name}: empty keyword in categories.{cat}")
            if norm not in seen:
                seen[norm] = m
                added.append(m)
                warnings.append(f"{name}: categories.{cat} lists {m!r}, which is not in 'keywords'; "
                                "indexed as a keyword")
            category_of.setdefault(norm, cat)
    return {
        "filepath": data["filepath"].strip(),   # as written: a separator or a file name's own (loader.describes)
        "title": title.strip() if isinstance(title, str) and title.strip() else None,
        "summary": data["summary"].strip(),
        "keywords": [(kw, category_of.get(normalize_keyword(kw))) for kw in [*kws, *added]],
        "warnings": warnings,
    }


def validate_similarities_data(data: Any, name: str) -> list[dict[str, Any]]:
    """Check a similarities file; every entry must be valid or nothing is imported."""
    if not isinstance(data, dict) or not isinstance(data.get("similarities"), list):
        raise ValidationError(f"{name}: expected an object with a 'similarities' list")
    out = []
    seen = set()
    for i, entry in enumerate(data["similarities"]):
        where = f"{name}: similarities[{i}]"
        if not isinstance(entry, dict):
            raise ValidationError(f"{where} must be an object")
        for required in ("keyword1", "keyword2", "type", "context"):
            if required not in entry:
                raise ValidationError(f"{where}: missing required field '{required}'")
        score = entry.get("score", 0.5)
        directional = entry.get("directional", False)
        if not isinstance(directional, bool):
            raise ValidationError(f"{where}: 'directional' must be true or false")
        try:
            validate_relation(entry["keyword1"], entry["keyword2"], entry["type"], entry["context"], score)
        except ValidationError as exc:
            raise ValidationError(f"{where}: {exc.message}") from None
        pair = tuple(sorted((normalize_keyword(entry["keyword1"]), normalize_keyword(entry["keyword2"]))))
        key = (pair, entry["type"])
        if key in seen:
            raise ValidationError(f"{where}: duplicate relation {entry['keyword1']!r} / {entry['keyword2']!r} ({entry['type']})")
        seen.add(key)
        out.append({
            "keyword1": entry["keyword1"], "keyword2": entry["keyword2"], "type": entry["type"],
            "context": entry["context"], "score": float(score), "directional": directional,
        })
    return out
