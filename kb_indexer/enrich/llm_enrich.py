"""One structured LLM call per document: title, summary, keywords with categories, questions.

The prompt follows the original tool's advice ("think of the questions a user would ask, then the
keywords"): the model first writes 3-5 questions the document answers, then 10-25 keywords a person
would search for, each with a category. The answer is validated against a bounded schema plus
:func:`_check` (lengths, distinct keywords); an invalid answer gets one repair attempt
(:class:`kb_indexer.llm.structured.LLMClient`), then the caller uses the statistical extractor and says
so. The cache key hashes the prompt, which holds the document text, with backend and model: the same
document enriched twice by the same model costs one call.
"""

from __future__ import annotations

from typing import Any

from kb_indexer.enrich.keyphrases import CATEGORIES, MAX_KEYWORDS, MIN_KEYWORDS
from kb_indexer.limits import MAX_KEYWORD_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS
from kb_indexer.llm.base import Message
from kb_indexer.text import normalize_keyword

TASK = "enrich_document"
DOC_CHARS = 6000          # of the document shown to the model
MAX_TOKENS = 900

SYSTEM = (
    "You index documents of a personal knowledge base so that they can be found later by keyword.\n"
    "First think of 3 to 5 questions a user would ask that this document answers. Then list 10 to 25 "
    "keywords a user would search for: the main topics, concepts, tools and libraries, people, and "
    "abbreviations with their long forms as separate keywords. Keywords are short (1-4 words), written as "
    "in the document, without duplicates. Give each a category: primary (the 3-5 main topics), concepts, "
    "tools, people or abbreviations. Also give a short title and a 2-3 sentence summary of what the "
    "document says. Never invent anything the document does not say.")


def schema() -> dict[str, Any]:
    """Bounded: every array has maxItems (lengths are checked by :func:`_check`, not the grammar)."""
    string = {"type": "string", "minLength": 1}
    keyword = {"type": "object", "properties": {"keyword": string, "category": {"type": "string",
                                                                               "enum": list(CATEGORIES)}},
               "required": ["keyword", "category"], "additionalProperties": False}
    return {"type": "object", "properties": {
        "title": string, "summary": string,
        "questions": {"type": "array", "items": string, "minItems": 3, "maxItems": 5},
        "keywords": {"type": "array", "items": keyword, "minItems": MIN_KEYWORDS, "maxItems": MAX_KEYWORDS},
    }, "required": ["title", "summary", "questions", "keywords"], "additionalProperties": False}


def _check(data: Any) -> list[str]:
    problems = []
    if len(data["title"]) > MAX_TITLE_CHARS:
        problems.append(f"the title has {len(data['title'])} characters; at most {MAX_TITLE_CHARS}")
    if len(data["summary"]) > MAX_SUMMARY_CHARS:
        problems.append(f"the summary has {len(data['summary'])} characters; write 2-3 sentences")
    seen: set[str] = set()
    for item in data["keywords"]:
        kw = item["keyword"]
        if len(kw) > MAX_KEYWORD_CHARS or len(kw.split()) > 6:
            problems.append(f"keyword {kw[:40]!r} is too long: keywords are 1-4 words")
        norm = normalize_keyword(kw)
        if not norm:
            problems.append("a keyword is empty")
        seen.add(norm)
    if len(seen) < MIN_KEYWORDS:
        problems.append(f"only {len(seen)} distinct keywords; give {MIN_KEYWORDS} to {MAX_KEYWORDS}")
    return problems


def prompt(filepath: str, title: str, text: str) -> list[Message]:
    body = text[:DOC_CHARS] + ("\n[... the rest is cut ...]" if len(text) > DOC_CHARS else "")
    return [Message("system", SYSTEM),
            Message("user", f"Document {filepath!r} (heading: {title!r}):\n\n{body}")]


def ask(client: Any, filepath: str, title: str, text: str) -> dict[str, Any]:
    """The validated answer (``title``, ``summary``, ``questions``, ``keywords``: [(kw, category)]);
    raises :class:`kb_indexer.llm.base.LLMError` when there is none."""
    result = client.structured(TASK, prompt(filepath, title, text), schema(), max_tokens=MAX_TOKENS,
                               check=_check)
    data = result.data
    keywords, seen = [], set()
    for item in data["keywords"]:
        kw = " ".join(item["keyword"].split())
        if normalize_keyword(kw) not in seen:
            seen.add(normalize_keyword(kw))
            keywords.append((kw, item["category"]))
    return {"title": " ".join(data["title"].split()), "summary": " ".join(data["summary"].split()),
            "questions": [" ".join(q.split()) for q in data["questions"]], "keywords": keywords,
            "cached": result.cached, "model": result.model}
