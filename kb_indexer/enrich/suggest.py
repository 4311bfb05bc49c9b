"""`kbindex suggest-similarities`: typed relations among the corpus' keywords, for review.

Sources, each suggestion with a context sentence, a score and its evidence:

* ``pattern`` -- "Reinforcement Learning (RL)" or "RL (reinforcement learning)" in a document, the letters
  of the short form being the initials of the long form's words: abbreviation, 0.85 (+0.05 for every
  further document saying so, at most 1.0).
* ``initials`` -- an upper-case keyword of the index that spells the initials of a multi-word keyword:
  abbreviation, 0.6 (a guess: "ML" could be "machine learning" or "maximum likelihood").
* ``co-occurrence`` -- two keywords that tag mostly the same documents (>= MIN_SHARED of them):
  related_concept, scored by their Jaccard overlap, at most CO_MAX (a guess like ``initials``: below the
  relations a person writes, which it must not outrank in an expansion). A document pairs up only its
  MAX_PAIR_TAGS rarest keywords (the pairs of hundreds of tags would grow as their square).
* ``llm`` -- synonyms, abbreviations and broader/narrower terms the LLM finds in groups of the most used
  keywords (one structured call per group; none without an LLM backend).

Pairs the index already relates (any type) or a person deleted are left out. ``--apply`` imports the
suggestions as learned items (kind ``similarity``, key ``suggestion:...``): ``kbindex learned list`` shows
them and ``kbindex learned remove`` undoes them, after which they are not suggested for applying again.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from itertools import combinations
from typing import Any

from kb_indexer.enrich.weak_words import LOW_CONTENT
from kb_indexer.store import fulltext
from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection

MIN_SHARED = 2            # documents two keywords must tag together
CO_MAX = 0.6              # the best score co-occurrence alone gives
MAX_COOCCURRENCE_DF = 0.05  # keywords on more of the documents are too common to relate this way
MAX_PAIR_TAGS = 40        # a document's rarest keywords that pair up (hundreds of tags: pairs grow as their square)
LLM_KEYWORDS = 120        # the most used keywords shown to the LLM
LLM_GROUP = 40            # keywords per LLM call
_SHORT = r"[A-Z][A-Za-z0-9&]{0,8}[A-Z0-9]s?"
_LONG_FIRST = re.compile(r"((?:[A-Za-z][\w'-]*\s+){0,7}[A-Za-z][\w'-]*)\s*\((" + _SHORT + r")\)")
_SHORT_FIRST = re.compile(r"\b(" + _SHORT + r")\s*\(([A-Za-z][\w' -]{2,80})\)")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n\s*\n|\n(?=[ \t]*#)")


def initials_match(short: str, words: list[str]) -> list[str] | None:
    """The trailing words of ``words`` whose initials spell ``short`` (hyphenated words count each part),
    or None."""
    letters = [c.lower() for c in short.rstrip("s") if c.isalpha()] if short[-1:] == "s" and short[:-1].isupper() \
        else [c.lower() for c in short if c.isalpha()]
    for k in range(1, min(len(words), 8) + 1):
        tail = words[-k:]
        initials = [p[0].lower() for w in tail for p in w.split("-") if p]
        if initials == letters or [w[0].lower() for w in tail] == letters:
            return tail if tail[0][0].isalpha() else None
    return None


def sentence_at(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` around ``[start, end)``, whitespace collapsed, at most 300 characters."""
    left = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    right = _SENTENCE_END.search(text, end)
    sentence = " ".join(text[left:right.start() + 1 if right else len(text)].split())
    return sentence if len(sentence) <= 300 else sentence[:297] + "..."


def abbreviation_patterns(docs: list[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(short, long form) -> {"documents", "context"} from the patterns in ``docs`` ((filepath, text))."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for filepath, text in docs:
        for m in _LONG_FIRST.finditer(text):
            tail = initials_match(m.group(2), m.group(1).split())
            if tail:
                _note(found, m.group(2), " ".join(tail).lower(), filepath, text, m)
        for m in _SHORT_FIRST.finditer(text):
            words = m.group(2).split()
            if initials_match(m.group(1), words) == words:
                _note(found, m.group(1), " ".join(words).lower(), filepath, text, m)
    return found


def _note(found: dict[tuple[str, str], dict[str, Any]], short: str, long: str, filepath: str, text: str,
          m: re.Match[str]) -> None:
    entry = found.setdefault((short, long), {"documents": [], "context": sentence_at(text, m.start(), m.end())})
    if filepath not in entry["documents"]:
        entry["documents"].append(filepath)


def suggestion(k1: str, k2: str, sim_type: str, context: str, score: float, source: str,
               evidence: dict[str, Any]) -> dict[str, Any]:
    return {"keyword1": k1, "keyword2": k2, "type": sim_type, "context": context, "score": round(score, 3),
            "directional": False, "source": source, "evidence": evidence}


def from_patterns(docs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    out = []
    for (short, long), e in sorted(abbreviation_patterns(docs).items()):
        n = len(e["documents"])
        out.append(suggestion(short, long, "abbreviation", e["context"], min(1.0, 0.85 + 0.05 * (n - 1)),
                              "pattern", {"documents": e["documents"][:5], "count": n}))
    return out


def from_initials(keywords: dict[str, str]) -> list[dict[str, Any]]:
    """``keywords``: normalised -> display. An upper-case one spelling a multi-word one's initials."""
    by_initials: dict[str, list[str]] = defaultdict(list)
    for norm in keywords:
        words = norm.split()
        if len(words) >= 2:
            by_initials["".join(p[0] for w in words for p in w.split("-") if p)].append(norm)
    out = []
    for norm, shown in sorted(keywords.items()):
        if " " in norm or not shown.isupper() or not 2 <= len(norm) <= 6:
            continue
        for long in by_initials.get(norm.rstrip("s") if shown.endswith("s") else norm, []):
            out.append(suggestion(shown, long, "abbreviation",
                                  f"{shown} spells the initials of {long} (both are keywords of the index)",
                                  0.6, "initials", {"initials": norm}))
    return out


def from_cooccurrence(conn: Connection) -> list[dict[str, Any]]:
    """Keyword pairs tagging mostly the same documents (Jaccard overlap as the score)."""
    tags: dict[int, list[int]] = defaultdict(list)
    weak = _weak_generated(conn)
    for doc_id, kid, source in conn.execute(
            "SELECT document_id, keyword_id, source FROM document_keywords WHERE source != 'learned'"):
        if source != "generated" or kid not in weak:
            tags[doc_id].append(kid)
    n_docs = max(1, len(tags))
    df = Counter(k for kids in tags.values() for k in set(kids))
    keep = {k for k, n in df.items() if MIN_SHARED <= n <= max(MIN_SHARED, MAX_COOCCURRENCE_DF * n_docs)}
    shared: Counter[tuple[int, int]] = Counter()
    first_doc: dict[tuple[int, int], int] = {}
    for doc_id, kids in tags.items():
        rarest = sorted({k for k in kids if k in keep}, key=lambda k: (df[k], k))[:MAX_PAIR_TAGS]
        for pair in combinations(sorted(rarest), 2):
            shared[pair] += 1
            first_doc.setdefault(pair, doc_id)
    names = dict(conn.execute("SELECT id, display FROM keywords"))
    bodies: dict[int, str] = {}
    out = []
    for (a, b), n in shared.items():
        if n < MIN_SHARED or same_word(names[a], names[b]):
            continue
        jaccard = n / (df[a] + df[b] - n)
        doc = first_doc[(a, b)]
        if doc not in bodies:
            bodies[doc] = fulltext.body(conn, doc)
        context = _co_context(bodies[doc], names[a], names[b]) or \
            f"{names[a]} and {names[b]} tag {n} of the same documents"
        out.append(suggestion(names[a], names[b], "related_concept", context, min(CO_MAX, jaccard), "co-occurrence",
                              {"shared_documents": n, "documents_a": df[a], "documents_b": df[b]}))
    return out


def _weak_generated(conn: Connection) -> set[int]:
    """Keywords that say nothing of a topic (``back``, ``adds``): as generated tags (an earlier extractor wrote
    them into keywords files) they pair up with everything and are left out of co-occurrence."""
    return {kid for kid, norm in conn.execute("SELECT id, keyword FROM keywords") if norm in LOW_CONTENT}


def same_word(a: str, b: str) -> bool:
    """Two spellings of one word (``move`` and ``moves``, ``query`` and ``queries``): not related concepts."""
    a, b = sorted((normalize_keyword(a), normalize_keyword(b)), key=len)
    return b in (a + "s", a + "es") or (a.endswith("y") and b == a[:-1] + "ies")


def _co_context(text: str, a: str, b: str) -> str | None:
    low = text.lower()
    i = low.find(a.lower())
    while i >= 0:
        sentence = sentence_at(text, i, i + len(a))
        if b.lower() in sentence.lower():
            return sentence
        i = low.find(a.lower(), i + 1)
    return None


def known_pairs(conn: Connection) -> set[frozenset[str]]:
    """Keyword pairs already related (any type) or whose relation a person deleted."""
    rows = conn.execute("SELECT k1.keyword, k2.keyword FROM keyword_similarities s JOIN keywords k1 ON "
                        "k1.id = s.keyword_id_1 JOIN keywords k2 ON k2.id = s.keyword_id_2 UNION "
                        "SELECT k1.keyword, k2.keyword FROM similarity_tombstones t JOIN keywords k1 ON "
                        "k1.id = t.keyword_id_1 JOIN keywords k2 ON k2.id = t.keyword_id_2")
    return {frozenset(r) for r in rows}


def combine(found: list[dict[str, Any]], known: set[frozenset[str]], min_score: float) -> list[dict[str, Any]]:
    """One suggestion per pair and type (the best scored), without known pairs, best first."""
    best: dict[tuple[frozenset[str], str], dict[str, Any]] = {}
    for s in found:
        pair = frozenset((normalize_keyword(s["keyword1"]), normalize_keyword(s["keyword2"])))
        if len(pair) < 2 or pair in known or s["score"] < min_score:
            continue
        key = (pair, s["type"])
        if key not in best or s["score"] > best[key]["score"]:
            best[key] = s
    return sorted(best.values(), key=lambda s: (-s["score"], s["keyword1"].lower(), s["keyword2"].lower()))


def similarities_file(suggestions: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``similarities.json`` format (what `import-similarities` and sync read)."""
    keys = ("keyword1", "keyword2", "type", "context", "score", "directional")
    return {"similarities": [{k: s[k] for k in keys} for s in suggestions]}


def evidence_text(s: dict[str, Any]) -> str:
    return f"{s['source']}: " + json.dumps(s["evidence"], ensure_ascii=False, sort_keys=True)
