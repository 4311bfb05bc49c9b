"""Helpers to build tiny knowledge bases inside tests."""

from __future__ import annotations

import json
from pathlib import Path


def write_doc(root: Path, rel: str, text: str, keywords: dict | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if keywords is not None:
        kw = dict(keywords)
        kw.setdefault("filepath", rel)
        path.with_name(path.stem + ".keywords.json").write_text(json.dumps(kw), encoding="utf-8")
    return path


def kw(summary: str, *keywords: str, **extra) -> dict:
    data = {"summary": summary, "keywords": list(keywords)}
    data.update(extra)
    return data
