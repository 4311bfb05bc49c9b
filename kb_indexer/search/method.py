"""Search-method selection (``--method auto``).

Follows ``memory-search-method-selection.md``: a query that contains exact
identifiers (camelCase / PascalCase names, snake_case, file names with an
extension, error codes such as ``ENOENT``, ``TypeError`` or ``404``) is
answered by exact keyword/identifier matching; a conceptual question (a semantic
cue: "related to", "similar", "about", "how to", 관련, 비슷한, ~에 대해, 방법, 어떻게)
by vector search (``semantic``), unless it also names an exact term (then hybrid,
as the design's "chroma 관련 작업 찾아줘"); anything else by hybrid search (keyword
tags with similarity expansion, full-text BM25 and vectors, fused). ``sqlite`` is
the design's name for ``keyword``.

Names are not identifiers: a camelCase or PascalCase word that is a keyword of
the index, or a PascalCase word inside a natural-language question (a proper
noun: "How does AlphaGo work?", "where is DeepMind based"), leaves the method
to hybrid; there, like every identifier-like word, it is searched as an exact
phrase with double weight (see :mod:`kb_indexer.search.query`). Words in
backticks are always identifiers.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Callable

from kb_indexer.search.options import ALIASES as ALIASES, METHODS as METHODS, check_method  # the names, in one place
from kb_indexer.search.terms import STOPWORDS
from kb_indexer.text import normalize_keyword

# Semantic cues (memory-search-method-selection.md): English phrases as whole words, Korean as written
# (they attach to the word before: "상태 관리에 대해", "인증 관련").
_SEMANTIC_EN = re.compile(r"\b(related to|relating to|similar|about|how to|how do i|how can i)\b", re.I)
_SEMANTIC_KO = ("관련", "비슷한", "에 대해", "에 대한", "방법", "어떻게")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.-]*")

# POSIX errno names commonly seen in error messages.
ERRNO_NAMES = frozenset("""
E2BIG EACCES EADDRINUSE EADDRNOTAVAIL EAGAIN EALREADY EBADF EBUSY ECANCELED ECHILD ECONNABORTED
ECONNREFUSED ECONNRESET EDEADLK EDESTADDRREQ EDOM EDQUOT EEXIST EFAULT EFBIG EHOSTDOWN EHOSTUNREACH
EINPROGRESS EINTR EINVAL EIO EISCONN EISDIR ELOOP EMFILE EMLINK EMSGSIZE ENAMETOOLONG ENETDOWN
ENETRESET ENETUNREACH ENFILE ENOBUFS ENODEV ENOENT ENOEXEC ENOLCK ENOMEM ENOSPC ENOSYS ENOTCONN
ENOTDIR ENOTEMPTY ENOTSOCK ENOTSUP ENOTTY ENXIO EOPNOTSUPP EOVERFLOW EPERM EPIPE EPROTO ERANGE EROFS
ESPIPE ESRCH ETIMEDOUT ETXTBSY EWOULDBLOCK EXDEV
""".split())

# POSIX signal names (signal(7)): a word such as SIGNAL or SIGMA is an ordinary word, not a signal.
SIGNAL_NAMES = frozenset("""
SIGABRT SIGALRM SIGBUS SIGCHLD SIGCLD SIGCONT SIGEMT SIGFPE SIGHUP SIGILL SIGINFO SIGINT SIGIO SIGIOT SIGKILL
SIGLOST SIGPIPE SIGPOLL SIGPROF SIGPWR SIGQUIT SIGRTMAX SIGRTMIN SIGSEGV SIGSTKFLT SIGSTOP SIGSYS SIGTERM
SIGTRAP SIGTSTP SIGTTIN SIGTTOU SIGUNUSED SIGURG SIGUSR1 SIGUSR2 SIGVTALRM SIGWINCH SIGXCPU SIGXFSZ
""".split())

FILE_EXTENSIONS = frozenset("""
c cc cfg cjs conf cpp cs css csv dart db dockerfile env ex exs go gradle h hpp htm html ini ipynb java
jl js json jsonl jsx kt kts lock log lua md markdown mjs php pl proto ps1 py pyi r rb rs sass scala scss
sh sql sqlite svelte swift tf toml ts tsv tsx txt vue xml yaml yml zig zsh
""".split())

_EDGE = "\"'“”‘’`,;:!?[]{}<>*"
_ERROR_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Fault)$")
_CAMEL = re.compile(r"^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$")
_PASCAL = re.compile(r"^[A-Z]+[a-z0-9]+(?:[A-Z]+[a-z0-9]+)+$")
_SNAKE = re.compile(r"^[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$|^_{1,2}[A-Za-z0-9_]+$")
_FILE = re.compile(r"^(?:[\w.-]+/)*[\w-][\w.-]*\.([A-Za-z][A-Za-z0-9]{0,9})$")
_DOTFILE = re.compile(r"^\.[a-z][a-z0-9_-]{1,30}$")
_DOTTED = re.compile(r"^[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+$")
_CALL = re.compile(r"^[A-Za-z_][\w.]*\(\)$")
_HTTP = re.compile(r"^[45]\d\d$")
_HEX = re.compile(r"^0x[0-9A-Fa-f]+$")
# Initials ("H.C." of "H.C. Andrews", "U.S."): capital letters each followed by a dot, not a file name.
_INITIALS = re.compile(r"^(?:[A-Z]\.)+[A-Z]$")
_CODE = re.compile(r"^(?:ERR_[A-Z0-9_]+|[A-Z]{1,3}\d{3,5})$")
_BACKTICK = re.compile(r"`([^`\s][^`]*)`")

# A bare 4xx/5xx number is a status code only beside one of these words (within HINT_WINDOW words) or in
# a question with other identifiers: "404 error", "HTTP 503", "returns 500", "got a 404 from the API" are
# status codes; "Top 500 tips for RL" is not.
HTTP_HINTS = frozenset("""
http https status code codes error errors err response responses respond responds responded return returns
returned returning reply replies api apis server servers request requests endpoint endpoints upstream
downstream gateway proxy nginx apache url curl fetch page fails failed failing timeout forbidden
unauthorized unavailable redirect
""".split())
HINT_WINDOW = 3
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Identifier:
    text: str
    kind: str


def _clean(chunk: str) -> str:
    """Strip surrounding punctuation, keeping a call's ``()`` and a dotfile's leading dot."""
    prev = None
    while prev != chunk:
        prev = chunk
        chunk = chunk.strip(_EDGE)
        if chunk.endswith("."):
            chunk = chunk[:-1]
        if chunk.endswith("()") and _CALL.match(chunk):
            return chunk
        chunk = chunk.strip("()")
    return chunk


def classify(word: str) -> str | None:
    """The identifier kind of one word, or None for an ordinary word."""
    if not word or len(word) > 200:
        return None
    if word in ERRNO_NAMES or word in SIGNAL_NAMES or _HEX.match(word) or word.startswith("ERR_") and _CODE.match(word):
        return "error code"
    if _CODE.match(word):
        return "code"
    if _HTTP.match(word):
        return "status code"
    if _ERROR_NAME.match(word):
        return "error name"
    if _CALL.match(word):
        return "function call"
    m = _FILE.match(word)
    if m and m.group(1).lower() in FILE_EXTENSIONS and not _INITIALS.match(word):
        return "file name"
    if _DOTFILE.match(word):
        return "file name"
    if _SNAKE.match(word):
        return "snake_case"
    if _CAMEL.match(word):
        return "camelCase"
    if _PASCAL.match(word):
        return "PascalCase"
    if _DOTTED.match(word) and not any(ch.isspace() for ch in word):
        return "dotted name"
    return None


def _scan(*texts: str) -> list[tuple[Identifier, bool, int, bool]]:
    """Identifier-like words, in order, without duplicates: ``(identifier, certain, text index, in backticks)``.

    A bare number that looks like an HTTP status (``404``) is certain only when a hint word
    (:data:`HTTP_HINTS`) is near it or it is in backticks.
    """
    found: list[tuple[Identifier, bool, int, bool]] = []
    seen: set[str] = set()

    def _add(text: str, kind: str, where: int, certain: bool = True, code: bool = False) -> None:
        if text not in seen:
            seen.add(text)
            found.append((Identifier(text, kind), certain, where, code))

    for where, text in enumerate(texts):
        if not text:
            continue
        text = unicodedata.normalize("NFKC", text)
        for m in _BACKTICK.finditer(text):
            inner = m.group(1).strip()
            if inner and len(inner) <= 200:
                _add(inner, classify(inner) or "code span", where, code=True)
        chunks = _BACKTICK.sub(" ", text).split()
        words = [w.lower() for c in chunks for w in _WORD.findall(c)] if chunks else []
        pos = 0
        for chunk in chunks:
            word = _clean(chunk)
            n = len(_WORD.findall(chunk))
            kind = classify(word)
            if kind == "status code":
                near = words[max(0, pos - HINT_WINDOW):pos] + words[pos + n:pos + n + HINT_WINDOW]
                _add(word, kind, where, any(w in HTTP_HINTS for w in near))
            elif kind:
                _add(word, kind, where)
            pos += n
    return found


def _settle(found: list[tuple[Identifier, bool, int, bool]]) -> list[Identifier]:
    """Uncertain status codes count only beside another (certain, non-status) identifier."""
    if any(certain and i.kind != "status code" for i, certain, _, _ in found):
        return [i for i, _, _, _ in found]
    return [i for i, certain, _, _ in found if certain]


def find_identifiers(*texts: str) -> list[Identifier]:
    """Identifier-like words in the texts, in order, without duplicates.

    A bare number that looks like an HTTP status (``404``) counts only when a hint word
    (:data:`HTTP_HINTS`) is near it, in backticks, or when the texts hold another identifier.
    """
    return _settle(_scan(*texts))


# -- names: identifier-shaped words that are not identifiers ---------------------------------------------

NAME_KINDS = frozenset({"PascalCase", "camelCase"})
PROSE_MIN_WORDS = 3        # ordinary words that make a natural-language question on their own
PROSE_MIN_WITH_FUNCTION = 2  # ... or this many when one is a function word (how, is, the, does ...)
_LETTER_WORD = re.compile(r"^[^\W\d_]+$")
KnownKeywords = Callable[[list[str]], "set[str]"]


def is_prose(text: str) -> bool:
    """A natural-language question or sentence: ``PROSE_MIN_WORDS`` ordinary words (letters only, not
    identifier-like), or ``PROSE_MIN_WITH_FUNCTION`` when one of them is a function word."""
    words = [w for w in (_clean(c) for c in _BACKTICK.sub(" ", unicodedata.normalize("NFKC", text or "")).split())
             if w and _LETTER_WORD.match(w) and classify(w) is None]
    if len(words) >= PROSE_MIN_WORDS:
        return True
    return len(words) >= PROSE_MIN_WITH_FUNCTION and any(w.lower() in STOPWORDS for w in words)


def split_names(found: list[tuple[Identifier, bool, int, bool]], question: str,
                known: KnownKeywords | None) -> tuple[list[tuple[Identifier, bool, int, bool]], list[Identifier]]:
    """Separate names from identifiers: a camelCase/PascalCase word (not in backticks) is a name when it is
    a known keyword of the index, or, PascalCase, a proper noun inside a natural-language question
    ("How does AlphaGo work?"). Returns ``(identifiers, names)``."""
    shaped = [f for f in found if f[0].kind in NAME_KINDS and not f[3]]
    if not shaped:
        return found, []
    known_set = known([normalize_keyword(f[0].text) for f in shaped]) if known else set()
    prose = is_prose(question)
    names: dict[str, Identifier] = {}
    for ident, _, where, _ in shaped:
        if normalize_keyword(ident.text) in known_set:
            names[ident.text] = Identifier(ident.text, "known keyword")
        elif prose and where == 0 and ident.kind == "PascalCase":
            names[ident.text] = Identifier(ident.text, "proper noun")
    return [f for f in found if f[0].text not in names], list(names.values())


@dataclass
class MethodChoice:
    method: str            # keyword | fulltext | hybrid
    requested: str         # what the caller asked for (auto included)
    reason: str
    identifiers: list[Identifier]
    names: list[Identifier] = field(default_factory=list)   # kind: "known keyword" or "proper noun"


def semantic_cue(question: str) -> tuple[str | None, str | None]:
    """``(cue, exact term)``: the semantic cue the question holds (None: none), and an exact term beside it
    that makes the question a mix (hybrid): a proper noun (a capitalised word after the first, not an
    all-capitals acronym such as API), or a Latin-script name in a Korean question ("chroma 관련")."""
    text = unicodedata.normalize("NFKC", question or "")
    m = _SEMANTIC_EN.search(text)
    cue = m.group(1).lower() if m else next((c for c in _SEMANTIC_KO if c in text), None)
    if cue is None:
        return None, None
    korean = any("\uac00" <= ch <= "\ud7a3" for ch in text)   # a Hangul syllable (no class: it costs a compile)
    words = _LATIN_WORD.findall(text)
    for i, word in enumerate(words):
        if word.isupper() and len(word) <= 6:      # an acronym is a generic term (API, HTTP, JSON)
            continue
        if korean or (i > 0 and word[0].isupper()):
            return cue, word
    return cue, None


def choose_method(requested: str, question: str, keywords: list[str] | None = None,
                  known: KnownKeywords | None = None) -> MethodChoice:
    """Resolve ``auto``; an explicit method is kept as given. ``known`` maps normalised words to those
    that are keywords of the index (a known keyword is a name, not an identifier)."""
    requested = check_method(requested)
    found, names = split_names(_scan(question, *(keywords or [])), question, known)
    idents = _settle(found)
    if requested != "auto":
        return MethodChoice(requested, requested, f"{requested} requested with --method", idents, names)
    if idents:
        shown = ", ".join(f"{i.text} ({i.kind})" for i in idents[:6])
        more = f" and {len(idents) - 6} more" if len(idents) > 6 else ""
        return MethodChoice("keyword", "auto", f"identifier-like terms: {shown}{more}; exact keyword/identifier "
                            "matching", idents, names)
    cue, exact = semantic_cue(question)
    exact = exact or (names[0].text if names else None)
    if cue and not exact:
        return MethodChoice("semantic", "auto", f"semantic cue {cue!r}: vector search (plus exact keyword tags)",
                            idents, names)
    why = f"semantic cue {cue!r} beside the exact term {exact!r}" if cue else "no identifier-like terms"
    if names:
        shown = ", ".join(f"{n.text} ({n.kind})" for n in names[:6])
        why += f"; not identifiers: {shown}; their exact matches are boosted"
    return MethodChoice("hybrid", "auto", f"{why}; hybrid: keyword tags with similarity expansion, full-text "
                        "BM25 and vectors, fused", idents, names)
