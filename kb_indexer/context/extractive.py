"""The deterministic summariser: pick the sentences that carry facts, within a token budget.

Used when no LLM is configured or the LLM fails (compression, the rolling summary), and for skills
content at the 95% level. The design says what a compressed history must keep: user preferences,
decisions, results and the active context; and what it may drop: redundancy, chit-chat, long
explanations. Each sentence of the replaced messages is scored by what it says, not by where it is:

* a first-person statement with a verb of wanting, choosing or committing ("I prefer ...", "we chose
  ...", "let's go with ...", "my colleague ... owns ...") or saying what something of ours is ("our team
  channel is ..."): +3;
* a standing instruction ("always", "never", "only", "from now on", "remember", "make sure"): +2;
* a decision or choice word ("decided", "chose", "instead of", "rather than", "switched to"): +2;
* numbers that measure or identify (decimals, grouped digits, units, percentages, three digits or
  more): +1.5, +0.5 for each further number (at most +2.5); a small bare count ("turn 3") only +0.5; a result word with a number ("scored", "dropped to", "converged", "latency", "accuracy"): +1.5;
* names (capitalised words inside the sentence, CamelCase, ACRONYMS, paths, `code`, quoted text,
  #channels and @handles, hyphenated codes with a digit): +1 each, +2 for a name of several capitalised
  words (a person's full name), at most +3;
* said by the user: +1; a question from the user: +0.5 more (it states the intent);
* an acknowledgement or chit-chat ("thanks", "ok, makes sense"): 0.

Sentences scoring under ``MIN_SCORE`` are never kept, so filler is not added just to fill the budget.
The rest are taken best value first (score per token, shorter sentences win ties), skipping a sentence
that repeats one already taken (fewer than a fifth of its content words new, and no number of its
own), until the budget is used; they are printed in their original
order, each run of one speaker under one label ("User:", "Assistant:"). Truncation (the last fallback)
keeps the newest messages that fit and says how many were dropped.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from kb_indexer.tokens import estimate_tokens, message_tokens

MIN_SCORE = 2.0
MAX_SENTENCE_CHARS = 600     # a longer "sentence" (a paragraph with no full stop) is cut to this
NEW_WORDS = 0.2              # a sentence with fewer new content words than this share repeats another
STOPWORDS = frozenset("the and for with that this these those are was were you your our but not have has had "
                      "can will from into about what which then than also just its it's there their they them "
                      "been being would could should does did".split())

_I = re.IGNORECASE
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|we|we're|we've|we'll|my|our|me|us|let's)\b", _I)
_COMMIT = re.compile(
    r"\b(prefer\w*|want\w*|need\w*|like|love|hate|dislike|use|using|chose|choose|chosen|decid\w*|agree\w*|"
    r"go(?:ing)? with|went with|pick\w*|switch\w*|settl\w*|plan\w*|stick with|own\w*|lead\w*|manag\w*|"
    r"work(?:s|ing)? (?:on|with|at)|call(?:ed)?|named?)\b", _I)
_STANDING = re.compile(r"\b(always|never|only|from now on|going forward|remember|make sure|avoid|"
                       r"don't|do not|no more|stop|keep)\b", _I)
_DECISION = re.compile(r"\b(decid\w*|chose|chosen|choose|picked|selected|agreed|settled|"
                       r"go(?:ing)? with|went with|instead of|rather than|switch\w* to|replac\w*|adopt\w*|"
                       r"final(?:ly)?|verdict|conclu\w*)\b", _I)
_POSSESSIVE = re.compile(r"\b(my|our)\s+(?:[\w-]+\s+){0,3}(is|are|was|were|will be)\b", _I)
_RESULT = re.compile(r"\b(scor\w*|achiev\w*|reach\w*|dropp\w*|drop|fell|rose|improv\w*|increas\w*|converg\w*|"
                     r"peak\w*|averag\w*|hit|total\w*|"
                     r"decreas\w*|measur\w*|results?|accuracy|precision|recall|f1|latency|throughput|took|"
                     r"cost\w*|came (?:in|out)|ended|finished|passed|failed|p\d\d|ndcg\w*|loss|error rate)\b", _I)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?:\s?(?:%|ms|s|sec|seconds|minutes|hours|days|weeks|gb|mb|kb|"
                     r"tb|k|m|x|×|usd|eur|\$|steps|epochs|iterations|tokens|requests|users|rows|documents|docs|"
                     r"files|queries))?(?![\w])", _I)
_NAME = re.compile(r"`[^`]{1,80}`|\"[^\"]{2,80}\"|“[^”]{2,80}”|(?<!\w)(?:[~./]?[\w-]+/)+[\w.-]+|"
                   r"[#@][\w-]{2,}|\b[a-z][\w]*-[\w-]*\d[\w-]*|"
                   r"\b[A-Z][a-z]+[A-Z]\w*|\b[A-Z]{2,}\w*|(?<=[^.!?]\s)[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*")
_ACK = re.compile(r"^(ok(ay)?|sure|thanks?( you)?|thx|great|cool|nice|got it|makes sense|i see|yes|yeah|yep|"
                  r"no|nope|right|hmm+|go on|continue|interesting|perfect|awesome|understood)\b[\s\w,.!]*$", _I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'“(\[]?[A-Z0-9가-힣])|\n+")
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)


def _lowercase_twin(rx: re.Pattern[str]) -> re.Pattern[str]:
    """``rx`` (case-insensitive, its pattern all lowercase) for lowercased ASCII text: the same matches
    without the case-insensitive matching, which costs about twice as much."""
    assert rx.pattern == rx.pattern.lower() and rx.flags & re.IGNORECASE
    return re.compile(rx.pattern)


#: The cues of :func:`score_sentence`, each case-insensitive for any text and its twin for lowercased ASCII.
_CUES = (_FIRST_PERSON, _COMMIT, _POSSESSIVE, _STANDING, _DECISION, _RESULT)
_LOWER_CUES = tuple(_lowercase_twin(rx) for rx in _CUES)


@dataclass
class Unit:
    """One sentence of one message."""
    index: int          # position among all units (original order)
    message: int        # index of its message in the list given
    role: str
    text: str
    score: float
    tokens: int
    words: frozenset[str]
    numbers: frozenset[str] = frozenset()


def _strong_number(number: str) -> bool:
    """A measurement or an identifier: decimals, grouped digits, a unit, or three digits or more."""
    digits = sum(c.isdigit() for c in number)
    return digits >= 3 or any(c in number for c in ".,:") or not number[-1].isdigit()


def score_sentence(text: str, role: str) -> float:
    """How much a sentence says that must survive (see the module docstring)."""
    return _score(text, role, len(_words(text)), _NUMBER.findall(text))


def _words(text: str) -> list[str]:
    """The sentence's words (``_WORD``), lowercased."""
    return _WORD.findall(text.lower()) if text.isascii() else [w.lower() for w in _WORD.findall(text)]


def _score(text: str, role: str, n_words: int, found: list[str]) -> float:
    """:func:`score_sentence` given the number of the sentence's words and its numbers, found once."""
    if n_words < 2 or _ACK.match(text.strip()):
        return 0.0
    score = 0.0
    ascii_text = text.isascii()
    cased = text.lower() if ascii_text else text
    first_person, commit, possessive, standing, decision, result = _LOWER_CUES if ascii_text else _CUES
    if (first_person.search(cased) and commit.search(cased)) or possessive.search(cased):
        score += 3.0
    if standing.search(cased):
        score += 2.0
    if decision.search(cased):
        score += 2.0
    strong = sum(1 for n in found if _strong_number(n))
    if strong:
        score += min(2.5, 1.5 + 0.5 * (len(found) - 1))
    elif found:
        score += 0.5          # a small bare count ("step 2", "turn 3") says little on its own
    if found and result.search(cased):
        score += 1.5
    names = set(_NAME.findall(text))
    score += min(3, sum(2 if " " in n and n[:1].isupper() else 1 for n in names))
    if role == "user":
        score += 1.5 if text.rstrip().endswith("?") else 1.0
    return score


def split_sentences(text: str) -> list[str]:
    """Sentences of a message; a code block counts as one line naming it (its body is not summarised)."""
    text = _CODE_BLOCK.sub(lambda m: " [code: " + (m.group(0)[3:].split("\n", 1)[0].strip() or "block") + "] ",
                           text)
    parts = []
    for raw in _SENTENCE.split(text):
        s = " ".join(raw.strip().lstrip("-*•>#").split())
        if s:
            parts.append(s if len(s) <= MAX_SENTENCE_CHARS else s[:MAX_SENTENCE_CHARS - 1] + "…")
    return parts


SUMMARY_MARK = "[Summary of the earlier conversation"
_LABELLED = re.compile(r"^(User|Assistant|Tool|Earlier): (.*)$")


def _summary_lines(content: str) -> list[tuple[str, str]]:
    """(role, text) of an earlier summary's labelled lines (its first line, the mark, is skipped)."""
    lines = content.split("\n")[1:] if content.startswith(SUMMARY_MARK) else content.split("\n")
    out = []
    for line in lines:
        m = _LABELLED.match(line.strip())
        if m:
            role = {v: k for k, v in LABELS.items()}.get(m.group(1), "user")
            out.append((role, m.group(2)))
        elif line.strip():
            out.append(("summary", line.strip()))
    return out


def _content_words(words: list[str]) -> frozenset[str]:
    """Of lowercased words."""
    return frozenset(words) - STOPWORDS


#: What :func:`units_of` found in one message, per sentence: (role, text, score, tokens, words, numbers).
Sentences = list[tuple[str, str, float, int, frozenset[str], frozenset[str]]]


def _message_sentences(message: dict[str, Any]) -> Sentences:
    role = str(message.get("role") or "user")
    content = message.get("content")
    if not isinstance(content, str) or role == "system":
        return []
    earlier = role == "summary" or content.startswith(SUMMARY_MARK)
    out: Sentences = []
    for who, text in (_summary_lines(content) if earlier else [(role, content)]):
        for s in split_sentences(text):
            words, found = _words(s), _NUMBER.findall(s)
            score = _score(s, who, len(words), found)
            out.append((who, s, max(score, MIN_SCORE) if earlier else score, estimate_tokens(s) + 1,
                        _content_words(words), frozenset(n.lower() for n in found)))
    return out


def units_of(messages: list[dict[str, Any]], memo: dict[int, Sentences] | None = None) -> list[Unit]:
    """Sentences of the messages; an earlier summary (role ``summary``, or a message starting with the
    summary mark) keeps its lines' speakers, and its sentences always qualify (they were chosen before).
    ``memo`` (keyed by ``id`` of a message the caller keeps alive) lets several summaries of the same
    messages split and score each message once."""
    units: list[Unit] = []
    for i, m in enumerate(messages):
        cached = memo.get(id(m)) if memo is not None else None
        found = cached if cached is not None else _message_sentences(m)
        if memo is not None and cached is None:
            memo[id(m)] = found
        for who, text, score, tokens, words, numbers in found:
            units.append(Unit(len(units), i, who, text, score, tokens, words, numbers))
    return units


class Taken:
    """The units chosen so far, indexed: whether a unit repeats one of them (fewer than ``NEW_WORDS`` of
    its content words new, no number of its own: "PPO scored 0.81" does not repeat "PPO scored 0.73", nor
    "option G for the log stage" "option A for the ingest stage") is checked against few of them, not all:

    * a chosen unit with the same content words and every number of it is a repeat (the usual case: the
      same sentence again);
    * else only the holders of one of its numbers (a repeat has them all), or the holders of one of its
      ``ceil(NEW_WORDS * n)`` rarest words, whichever are fewer: a unit that lacks that many of the ``n``
      words misses too many to be repeated, so every unit it could repeat is among them."""

    def __init__(self) -> None:
        self.units: list[Unit] = []
        self.by_word: dict[str, list[Unit]] = {}
        self.by_number: dict[str, list[Unit]] = {}
        self.by_words: dict[frozenset[str], list[Unit]] = {}

    def repeats(self, unit: Unit) -> bool:
        if not unit.words:
            return False
        if any(unit.numbers <= c.numbers for c in self.by_words.get(unit.words, ())):
            return True
        limit = NEW_WORDS * len(unit.words)
        rarest = sorted(unit.words, key=lambda w: (len(self.by_word.get(w, ())), w))[:max(1, math.ceil(limit))]
        by_words = [c for w in rarest for c in self.by_word.get(w, ())]
        by_number = min((self.by_number.get(n, []) for n in unit.numbers), key=len, default=None)
        candidates = by_number if by_number is not None and len(by_number) < len(by_words) else by_words
        return any(unit.numbers <= c.numbers and len(unit.words - c.words) < limit for c in candidates)

    def add(self, unit: Unit) -> None:
        self.units.append(unit)
        self.by_words.setdefault(unit.words, []).append(unit)
        for word in unit.words:
            self.by_word.setdefault(word, []).append(unit)
        for number in unit.numbers:
            self.by_number.setdefault(number, []).append(unit)


LABELS = {"user": "User", "assistant": "Assistant", "tool": "Tool", "summary": "Earlier"}


def render(units: list[Unit]) -> str:
    """Units in original order, each run of one speaker on one labelled line."""
    lines: list[str] = []
    role = None
    for u in sorted(units, key=lambda u: u.index):
        if u.role == role:
            lines[-1] += " " + u.text
        else:
            role = u.role
            lines.append(f"{LABELS.get(u.role, u.role.title())}: {u.text}")
    return "\n".join(lines)


def select(units: list[Unit], budget_tokens: int, max_chars: int | None = None) -> list[Unit]:
    """The best units that fit ``budget_tokens`` (and, when given, whose rendering fits ``max_chars``:
    the rolling summary's cap is in characters, so it is checked on the text itself)."""
    ranked = sorted((u for u in units if u.score >= MIN_SCORE),
                    key=lambda u: (-u.score / math.sqrt(u.tokens), u.tokens, u.index))
    taken = Taken()
    used = 0
    for u in ranked:
        cost = u.tokens + 2   # the label or separator it may need
        if used + cost > budget_tokens or taken.repeats(u):
            continue
        if max_chars is not None and len(render(taken.units + [u])) > max_chars:
            continue
        taken.add(u)
        used += cost
    return taken.units


def summarise(messages: list[dict[str, Any]], budget_tokens: int, previous: str = "",
              max_chars: int | None = None, memo: dict[int, Sentences] | None = None) -> tuple[str, int]:
    """The fact-carrying sentences of ``messages`` (and of an earlier summary ``previous``) that fit
    ``budget_tokens`` (and ``max_chars``); returns (text, how many sentences were kept). Empty text when
    none qualifies. ``memo``: see :func:`units_of`."""
    units = units_of(([{"role": "summary", "content": previous}] if previous else []) + messages, memo)
    chosen = select(units, budget_tokens, max_chars)
    return render(chosen), len(chosen)


def truncate(messages: list[dict[str, Any]], budget_tokens: int) -> tuple[list[dict[str, Any]], int]:
    """The newest messages whose estimated tokens fit ``budget_tokens``, and how many were dropped."""
    kept: list[dict[str, Any]] = []
    used = 0
    for m in reversed(messages):
        cost = message_tokens(m)
        if used + cost > budget_tokens:
            break
        kept.append(m)
        used += cost
    kept.reverse()
    return kept, len(messages) - len(kept)


def compress_text(text: str, budget_tokens: int) -> str:
    """A long instruction text (a skill) cut to ``budget_tokens``: headings, list items and each
    paragraph's first sentence first, the rest as room allows, in the original order."""
    lines = text.splitlines()
    ranked: list[tuple[int, int, str]] = []
    first_of_paragraph = True
    in_code = False
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("```"):
            in_code = not in_code
            continue
        if not s:
            first_of_paragraph = True
            continue
        if in_code:
            rank = 4
        elif s.startswith("#"):
            rank = 0
        elif re.match(r"^([-*•]|\d+[.)])\s", s):
            rank = 1
        else:
            rank = 2 if first_of_paragraph else 3
            if rank == 2:
                s = split_sentences(s)[0] if split_sentences(s) else s
        first_of_paragraph = False
        ranked.append((rank, i, s if rank != 1 else line.rstrip()))
    chosen, used = [], 0
    for rank, i, s in sorted(ranked):
        cost = estimate_tokens(s) + 1
        if used + cost <= budget_tokens:
            chosen.append((i, s))
            used += cost
    return "\n".join(s for _, s in sorted(chosen))
