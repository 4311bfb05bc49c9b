"""Input normalisation: the one function every front end uses before a message reaches an LLM or a matcher.

``normalise(text)`` (design: chat-context-strategy.md, "Client-side normalization"):

1. strip filler phrases: the LEADING ones of ``LEADING_FILLERS`` (repeatedly: "hey, can you please
   open ..." loses all three), the TRAILING ones of ``TRAILING_FILLERS`` ("..., please", "... thanks"),
   and the word "please" anywhere outside `code` spans. A filler is removed only as whole words at those
   places: "what can you do?" keeps its "can you" (it is not at the start), "pleased" is not "please",
   nor is "Please-no";
2. collapse immediately repeated words, ignoring case ("workspace workspace 5" -> "workspace 5"): only
   words of letters (numbers and codes repeat for a reason: "1 1 2 3"), never inside `code` spans,
   and not the grammatical doublings of ``KEEP_DOUBLED`` ("he had had enough");
3. collapse runs of whitespace and trim.

A message is never emptied: if nothing but filler would be left ("please", "thanks"), the original
(trimmed) is returned. The caller always keeps the original beside the normalised text.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Callable

# Leading filler phrases, stripped repeatedly from the start (longest first, case-insensitive), each
# followed by optional punctuation. Documented in docs/context.md.
LEADING_FILLERS = (
    "could you please", "can you please", "would you please", "will you please",
    "i would like to", "i'd like to", "i want to", "i wanna", "i need you to",
    "how about", "what about",
    "can you", "could you", "would you", "will you", "can u", "pls", "plz",
    "please", "kindly", "let's", "let us", "lets",
    "um", "uh", "umm", "uhh", "hmm", "ok so", "okay so",
)
# Leading words that are filler only when punctuation or another filler follows them: "Hi, open X" and
# "hey can you open X" lose them, "hello world", "Well done", "so what?" and "hi-fi" keep them.
LEADING_INTERJECTIONS = ("hey there", "hey", "hi there", "hi", "hello there", "hello", "so", "well")
TRAILING_FILLERS = ("please", "pls", "plz")
# Thanks at the end only after punctuation ("Open it, thanks"): "type thanks" keeps its object.
TRAILING_THANKS = ("thanks", "thank you", "thx")

_WORD_END = r"(?![\w'-])"
# Not a filler when followed by "not" ("can you not do that?"), "rather" ("would you rather ..."), "huh"
# ("uh huh" is a yes), "know" ("let us know"), by a lone pronoun ("what about it?") or, for "let's", by a
# capitalised word ("Let's Encrypt certificates").
_LEADING = re.compile(
    r"^\s*(?:" + "|".join(re.escape(f) for f in sorted(LEADING_FILLERS, key=len, reverse=True)) + r")"
    + _WORD_END + r"(?<!let's(?=\s(?-i:[A-Z])))(?<!lets(?=\s(?-i:[A-Z])))" + r"(?!\s+(?:not|rather|huh|know)\b)"
    + r"(?!\s+(?:it|this|that|them|him|her|you|me|us)\s*[?.!]*\s*$)[\s,;:!.\-]*", re.IGNORECASE)
_FILLER_AHEAD = "|".join(re.escape(f) for f in sorted(LEADING_FILLERS, key=len, reverse=True))
_INTERJECTION = re.compile(
    r"^\s*(?:" + "|".join(re.escape(f) for f in sorted(LEADING_INTERJECTIONS, key=len, reverse=True)) + r")"
    + r"(?:\s*[,;:!.]+\s*|\s+(?=(?:" + _FILLER_AHEAD + r")" + _WORD_END + r"))", re.IGNORECASE)
_TRAILING = re.compile(
    r"(?:[\s,;]*\b(?:" + "|".join(re.escape(f) for f in sorted(TRAILING_FILLERS, key=len, reverse=True)) + r")"
    + r"|(?<=[,;.!?])\s*\b(?:" + "|".join(re.escape(f) for f in TRAILING_THANKS) + r"))"
    + r"(?P<end>[\s.!?]*)$", re.IGNORECASE)
_PLEASE = re.compile(r"(?<![\w'-])please(?![\w'-])[\s,]*", re.IGNORECASE)
_CODE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.DOTALL)
_REPEAT = re.compile(r"(?<![\w'-])([^\W\d_]+)(?:[ \t]+\1(?![\w'-]))+", re.IGNORECASE)
# English words whose doubling is grammatical ("he had had enough", "he said that that was fine").
KEEP_DOUBLED = frozenset({"had", "that", "so"})
_WS = re.compile(r"\s+")
_SPACES = re.compile(r"[^\S\n]+")


# First-person fillers kept when a single word would be left: "I want to open workspace 5" -> "open
# workspace 5", but "I wanna die" is not "Die".
SPEAKER_FILLERS = ("i would like to", "i'd like to", "i want to", "i wanna", "i need you to")


def _strip_leading(text: str) -> str:
    while True:
        stripped = _LEADING.sub("", text, count=1)
        if stripped == text:
            stripped = _INTERJECTION.sub("", text, count=1)
        if stripped == text or not stripped.strip():
            return text
        if text.strip().lower().startswith(SPEAKER_FILLERS) and len(stripped.split()) < 2:
            return text
        text = stripped


def _strip_trailing(text: str) -> str:
    while True:
        match = _TRAILING.search(text)
        if not match or not text[:match.start()].strip():
            return text
        head, end = text[:match.start()].rstrip(" ,;"), match.group("end").strip()
        if head.rstrip().endswith((".", "!", "?", "…")):
            end = ""                         # "Done! Thanks." -> "Done!", not "Done!."
        text = head + end


def _one(m: re.Match[str]) -> str:
    """One of the repeated words, unless the doubling is grammatical or a name ("Bora Bora", "Duran
    Duran": every occurrence capitalised)."""
    if m.group(1).lower() in KEEP_DOUBLED or all(w[:1].isupper() for w in m.group(0).split()):
        return m.group(0)
    return m.group(1)


def _tidy_spaces(text: str) -> str:
    """Runs of spaces and tabs become one space and blank-line runs one blank line, outside code: the
    lines of a list, a log or a pasted table stay lines."""
    def tidy(part: str) -> str:
        part = _SPACES.sub(" ", part)
        part = re.sub(r" ?\n ?", "\n", part)
        return re.sub(r"\n{3,}", "\n\n", part)
    return _outside_code(tidy, text)


def _outside_code(edit: Callable[[str], str], text: str) -> str:
    """``edit`` applied to the parts of ``text`` outside `code` spans (those are kept verbatim)."""
    out, last = [], 0
    for m in _CODE.finditer(text):
        out.append(edit(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(edit(text[last:]))
    return "".join(out)


def _collapse_repeats(text: str) -> str:
    """Repeated words outside `code` spans."""
    return _outside_code(lambda part: _REPEAT.sub(_one, part), text)


def normalise(text: str) -> str:
    """The normalised message (see the module docstring); never empty unless ``text`` is blank."""
    original = _tidy_spaces(unicodedata.normalize("NFC", text)).strip()
    result = _strip_leading(original)
    result = _strip_trailing(result)
    result = _outside_code(lambda part: _PLEASE.sub("", part), result)
    result = _collapse_repeats(result)
    result = _tidy_spaces(result).strip(" ,;:-\n")
    if not re.search(r"\w", result):
        return original
    if result[:1].islower() and original[:1].isupper() and result != original:
        result = result[0].upper() + result[1:]
    return result


def normalised_pair(text: str) -> dict[str, str]:
    """``{"original", "normalised"}``: the form every JSON answer uses."""
    return {"original": text, "normalised": normalise(text)}
