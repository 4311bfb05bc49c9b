"""``--format markdown``: results as a block ready to inject into an agent's prompt.

The context-injection format of ``memory-search-method-selection.md``: the
query, method and count, then per result its score as a percentage, its
sources, its path and a snippet (one line, with a document's heading markers taken out, so a ``# Title``
never becomes a heading of the prompt it is injected into)::

    ## Related Knowledge

    **Search:** "reinforcement learning" (method: hybrid, 2 of 9 results)

    ### Result 1 - 100% match (keyword, fulltext)
    **Path:** ai-llm-vs-reinforcement-learning.md | **Title:** AI: LLMs vs RL | **Keywords:** reinforcement learning

    ...snippet...

    ---
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from kb_indexer.text import normalize_keyword

HEADING = "## Related Knowledge"


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def _path(path: str) -> str:
    """A path on its line, unambiguous: a backslash is written twice and a line break (any character
    ``str.splitlines`` breaks at) as an escape, so the block keeps its shape for the agent reading it (the JSON
    has the name as it is)."""
    return path.translate(_PATH_ESCAPES)


_PATH_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\v": "\\v", "\f": "\\f", "\x1c": "\\x1c",
                               "\x1d": "\\x1d", "\x1e": "\\x1e", "\x85": "\\x85", "\u2028": "\\u2028",
                               "\u2029": "\\u2029"})


_HEADING_MARK = re.compile(r"(?:^|(?<=\s))#{1,6}(?=\s)\s*")


def _snippet(text: Any) -> str:
    """The snippet on one line without markdown heading markers (``# Title`` → ``Title``)."""
    return _HEADING_MARK.sub("", _one_line(text))


def _count(shown: int, total: int | None) -> str:
    """``2 results``, or ``2 of 9 results`` when the limit shows fewer than were found."""
    noun = "result" if (total if total is not None else shown) == 1 else "results"
    if total is not None and total > shown:
        return f"{shown} of {total} {noun}"
    return f"{shown} {noun}"


def _pct(score: float) -> int:
    return int(round(max(0.0, min(1.0, float(score))) * 100))


def _block(lines: list[str], search_line: str, items: list[dict[str, Any]]) -> str:
    lines += [HEADING, "", search_line, ""]
    if not items:
        lines += ["No matching documents.", ""]
    for i, item in enumerate(items, 1):
        rule = item.get("rule")   # a pinned result says so rather than its score
        match = f"pinned by rule {rule['id']}" if rule else f"{_pct(item['score'])}% match"
        lines.append(f"### Result {i} - {match} ({', '.join(item['sources']) or '-'})")
        meta = [f"**Path:** {_path(item['filepath'])}"]
        if item.get("title"):
            meta.append(f"**Title:** {_one_line(item['title'])}")
        if item.get("keywords"):
            meta.append(f"**Keywords:** {', '.join(item['keywords'])}")
        lines += [" | ".join(meta), ""]
        text = _snippet(item.get("snippet"))
        if text:
            lines += [text, ""]
        lines += ["---", ""]
    return "\n".join(lines).rstrip() + "\n"


def render_query(result: Mapping[str, Any]) -> str:
    """The ``kbindex query`` result as a context-injection block."""
    q = result["query"]
    what = f'"{_one_line(q.get("question"))}"' if _one_line(q.get("question")) else ""
    if q.get("keywords_from") == "given" and q.get("keywords"):
        kws = ", ".join(f'"{k}"' for k in q["keywords"])
        what = f"{what} (keywords: {kws})" if what else f"keywords {kws}"
    if q.get("context"):
        what += f" in context \"{_one_line(q['context'])}\""
    search_line = f"**Search:** {what or '(empty)'} (method: {q['method']}, " \
                  f"{_count(result['count'], result.get('total'))})"
    items = [{"score": r["relevance_score"], "sources": r["sources"], "filepath": r["filepath"], "title": r["title"],
              "keywords": r["matched_keywords"], "snippet": r.get("snippet") or r.get("summary"), "rule": r.get("rule")}
             for r in result["results"]]
    return _block([], search_line, items)


def render_search(result: Mapping[str, Any]) -> str:
    """The ``kbindex search`` (exact keyword tags) result as a context-injection block.

    The score is the share of the searched keywords a document is tagged with.
    """
    q = result["query"]
    kws = q.get("keywords") or []
    search_line = (f"**Search:** keywords {', '.join(repr_kw(k) for k in kws)} "
                   f"(method: keyword, mode: {q.get('mode', 'or')}, {_count(result['count'], result.get('total'))})")
    total = max(1, len({normalize_keyword(k) for k in kws} - {""}))
    items = [{"score": min(1.0, len(r["matched_keywords"]) / total),
              "sources": ["keyword"] if r["matched_keywords"] else ["rule"],   # untagged: only a pin shows it
              "filepath": r["filepath"], "title": r.get("title"), "keywords": r["matched_keywords"],
              "snippet": r.get("summary"), "rule": r.get("rule")} for r in result["results"]]
    return _block([], search_line, items)


def repr_kw(k: str) -> str:
    return f'"{_one_line(k)}"'
