"""Markdown reading: front matter, title, first paragraph, body text."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb_indexer.errors import ValidationError

SUMMARY_MAX = 400
# A closing sequence of #s counts only after whitespace: "# C#" is about C#.
_H1 = re.compile(r"^#\s+(.+?)(?:\s+#+)?\s*$")
_HEADING = re.compile(r"^#{1,6}\s")
_FENCE = re.compile(r"^(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# Emphasis markers around a run of text, at word boundaries: **x**, __x__, *x*, _x_ (***x*** too). Markers
# inside words (parse_args, snake_case_name, 2*3) are text.
_EMPHASIS = re.compile(r"(?<![\w*])(\*{1,3}|_{1,3})(?!\s|\1)(.+?)(?<=\S)\1(?![\w*])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


@dataclass
class ParsedMarkdown:
    front_matter: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    summary: str | None = None
    body: str = ""


def _read_regular(path: Path, name: str) -> bytes:
    """The bytes of a regular file. Opened non-blocking and checked before reading, so a FIFO, device or
    socket named like a document is refused instead of blocking forever."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValidationError(f"{name} is not a regular file (a FIFO, device, socket or folder); "
                                  "only regular files are read")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_file(path: Path, display: str | None = None) -> tuple[str, bytes]:
    """Read a UTF-8 text file; binary and non-UTF-8 files are refused clearly."""
    name = display or str(path)
    try:
        data = _read_regular(path, name)
    except FileNotFoundError:
        raise ValidationError(f"File not found: {name}", code="not_found") from None
    except IsADirectoryError:
        raise ValidationError(f"Not a file: {name}") from None
    except OSError as exc:
        raise ValidationError(f"Cannot read {name}: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise ValidationError(f"{name} looks like a binary file (it contains NUL bytes); only UTF-8 text is indexed")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{name} is not valid UTF-8 (byte {exc.start}); only UTF-8 text is indexed") from None
    return text, data


def _scalar(value: str) -> Any:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _split_inline_list(value: str) -> list[str]:
    inner = value.strip()[1:-1]
    items, buf, quote = [], "", None
    for ch in inner:
        if quote:
            if ch == quote:
                quote = None
            else:
                buf += ch
        elif ch in "'\"":
            quote = ch
        elif ch == ",":
            items.append(buf.strip())
            buf = ""
        else:
            buf += ch
    if buf.strip():
        items.append(buf.strip())
    return [i for i in items if i]


def parse_front_matter(block: str) -> dict[str, Any]:
    """A small YAML subset: ``key: value``, ``key: [a, b]`` and block lists (``- item``)."""
    data: dict[str, Any] = {}
    current: str | None = None
    for raw in block.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        stripped = line.strip()
        if stripped.startswith("- ") and current is not None:
            if not isinstance(data.get(current), list):
                data[current] = []
            data[current].append(_scalar(stripped[2:]))
            continue
        if ":" in line and not line[0].isspace():
            key, _, value = line.partition(":")
            key = key.strip()
            value = value.strip()
            current = key
            if value.startswith("[") and value.endswith("]"):
                data[key] = [_scalar(v) for v in _split_inline_list(value)]
            elif value:
                data[key] = _scalar(value)
            else:
                data[key] = []
    return data


def _unemphasise(text: str) -> str:
    for _ in range(3):  # nested: **bold _and_ em**
        new = _EMPHASIS.sub(r"\2", text)
        if new == text:
            break
        text = new
    return text


def _plain(text: str) -> str:
    """Inline markdown to plain text: links keep their text, code spans their content (verbatim), and only
    real emphasis markers go."""
    text = _LINK.sub(r"\1", text)
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_unemphasise(text[pos:m.start()]))
        out.append(m.group(2).strip() or m.group(2))
        pos = m.end()
    out.append(_unemphasise(text[pos:]))
    return "".join(out).strip()


def parse_markdown(text: str) -> ParsedMarkdown:
    out = ParsedMarkdown()
    body = text
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                out.front_matter = parse_front_matter("\n".join(lines[1:i]))
                body = "\n".join(lines[i + 1:])
                break
    out.body = body.strip()
    in_fence = False
    para: list[str] = []
    done = False
    for line in body.splitlines():
        s = line.strip()
        if _FENCE.match(s):
            in_fence = not in_fence
            done = done or bool(para)
            continue
        if in_fence:
            continue
        m = _H1.match(s)
        if m and out.title is None:
            out.title = _plain(m.group(1))
            done = done or bool(para)
            continue
        if done:
            if out.title is not None:
                break
            continue
        if _HEADING.match(s) or s.startswith(("<!--", "|", ">")) or s.startswith("!["):
            done = bool(para)
            continue
        if not s:
            done = bool(para)
            continue
        para.append(s)
    if para:
        summary = _plain(" ".join(para))
        if len(summary) > SUMMARY_MAX:
            summary = summary[:SUMMARY_MAX].rsplit(" ", 1)[0] + "…"
        out.summary = summary
    return out


def front_matter_keywords(front_matter: dict[str, Any]) -> list[str]:
    for key in ("keywords", "tags"):
        value = front_matter.get(key)
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list):
            return [str(v).strip() for v in value if str(v).strip()]
    return []
