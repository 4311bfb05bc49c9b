"""Splitting a document into the passages that get one embedding vector each.

Heading and paragraph aware, with overlap:

1. the body is cut into blocks: a markdown heading line, or a paragraph (lines up to a blank line;
   a fenced code block stays whole); a block longer than ``MAX_CHARS`` is cut at sentence ends,
   and a sentence longer than that at word boundaries;
2. blocks are packed into chunks of at most ``MAX_CHARS`` characters; a heading starts a new chunk
   once the current one holds ``MIN_CHARS``, so sections stay together where they can;
3. each new chunk starts with the end of the previous one (whole blocks, or the last words of one,
   up to ``OVERLAP_CHARS``), so a passage cut in two is still whole in one of the chunks;
4. every chunk starts with the document's title and its section heading, the context a passage
   needs to be understood alone.

At most ``MAX_CHUNKS`` chunks a document (the rest is reported as truncated). ``CHUNKER_VERSION``
is part of what `kbindex embed` compares: changing these rules re-embeds every document.
"""

from __future__ import annotations

import re

CHUNKER_VERSION = 1
MAX_CHARS = 1000        # ~200-250 tokens: inside all-MiniLM-L6-v2's 256 word pieces
MIN_CHARS = 300
OVERLAP_CHARS = 200
MAX_CHUNKS = 64

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def _blocks(body: str) -> list[tuple[str, bool]]:
    """``(text, is_heading)`` blocks of the body, in order."""
    out: list[tuple[str, bool]] = []
    para: list[str] = []
    fence = None

    def flush() -> None:
        text = "\n".join(para).strip()
        if text:
            out.append((text, False))
        para.clear()

    for line in body.splitlines():
        m = _FENCE.match(line)
        if fence is not None:
            para.append(line)
            if m and m.group(1) == fence:
                fence = None
                flush()
            continue
        if m:
            flush()
            fence = m.group(1)
            para.append(line)
        elif heading := _HEADING.match(line):
            flush()
            out.append((heading.group(1).strip(), True))
        elif not line.strip():
            flush()
        else:
            para.append(line)
    flush()
    return out


def _split_long(text: str, limit: int) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` characters, at sentence ends, else between words."""
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        parts += _pack([w[:limit] for w in sentence.split()], limit) if len(sentence) > limit else [sentence]
    return _pack(parts, limit)


def _pack(items: list[str], limit: int) -> list[str]:
    """``items`` (each at most ``limit`` characters) joined by spaces, greedily, into runs of at most ``limit``."""
    runs: list[str] = []
    current = ""
    for item in items:
        if current and len(current) + 1 + len(item) > limit:
            runs.append(current)
            current = item
        else:
            current = f"{current} {item}" if current else item
    if current:
        runs.append(current)
    return runs


def _tail(blocks: list[str], limit: int) -> list[str]:
    """The last blocks (or the last words of the last block) that fit in ``limit`` characters."""
    out: list[str] = []
    size = 0
    for block in reversed(blocks):
        if size + len(block) <= limit:
            out.insert(0, block)
            size += len(block) + 2
            continue
        if not out:
            words = block.split()
            kept: list[str] = []
            for word in reversed(words):
                if sum(len(w) + 1 for w in kept) + len(word) > limit:
                    break
                kept.insert(0, word)
            if kept and len(kept) < len(words):
                out.insert(0, "… " + " ".join(kept))
        break
    return out


def chunk_text(title: str, body: str) -> tuple[list[str], bool]:
    """The passages to embed for one document, and whether it was cut at ``MAX_CHUNKS``."""
    title = " ".join((title or "").split())
    chunks: list[str] = []
    current: list[str] = []     # blocks of the chunk being filled
    fresh = 0                   # how many of them are new (not overlap)
    heading = ""
    section = ""                # heading of the chunk being filled
    budget = MAX_CHARS - len(title) - 2

    def size() -> int:
        return sum(len(b) + 2 for b in current)

    def emit() -> None:
        nonlocal current, fresh
        if fresh:
            head = [title] if title else []
            if section and section != title:
                head.append(section)
            chunks.append("\n\n".join(head + current))
        current, fresh = _tail(current, OVERLAP_CHARS), 0

    for text, is_heading in _blocks(body or ""):
        if is_heading:
            heading = text
            if size() >= MIN_CHARS:
                emit()
                current = []          # no overlap across a section boundary
            if not fresh:
                section = heading
            continue
        for piece in _split_long(text, max(200, budget - len(heading) - 2)):
            if fresh and size() + len(piece) > budget - len(section):
                emit()
                section = heading
            current.append(piece)
            fresh += 1
    emit()
    if not chunks and title:
        chunks.append(title)
    truncated = len(chunks) > MAX_CHUNKS
    return chunks[:MAX_CHUNKS], truncated
