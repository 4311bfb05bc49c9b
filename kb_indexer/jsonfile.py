"""A JSON file of one object read in pieces: one member, an object of lists (an export's ``tables``), stays on
disk and its lists are read item by item, as often as they are needed, from where they start in the file.

:func:`read_object` reads the file once, checking all of it as ``json.loads`` would (``limits.parse_json``'s
errors: invalid JSON with its line and column, NaN, nesting too deep; a NUL byte or invalid UTF-8 as
``read_text_file`` refuses them) while holding one item at a time; what it returns holds the other members
and, for each list, where it starts, how many items it has and whether they are all objects.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Iterator

from kb_indexer.errors import ValidationError
from kb_indexer.limits import MAX_JSON_DEPTH, json_depth

_CHUNK = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")


def _no_constant(name: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValidationError(f"{name}: {token} is not a valid JSON number")
    return refuse


class _Reader:
    """The file's text from byte ``offset`` on, a block at a time, for parsing one value after another."""

    def __init__(self, fd: int, name: str, offset: int = 0, *, checked: bool = False):
        self.fd, self.name, self.file_pos, self.checked = fd, name, offset, checked   # checked: depth known
        self.decoder = codecs.getincrementaldecoder("utf-8-sig" if offset == 0 else "utf-8")()
        self.json = json.JSONDecoder(parse_constant=_no_constant(name))
        self.buf, self.pos, self.eof = "", 0, False
        self.base = offset            # byte offset of buf[0] (at the start: before a BOM, which is not text)
        self.lines, self.column = 0, 0   # newlines before buf[0], characters since the last one

    def _more(self, size: int = _CHUNK) -> bool:
        """Read another block (at least ``size`` bytes); False at the end of the file."""
        if self.eof:
            return False
        data = os.pread(self.fd, size, self.file_pos)
        if b"\x00" in data:
            raise ValidationError(f"{self.name} looks like a binary file (it contains NUL bytes); only UTF-8 "
                                  "text is indexed")
        if self.file_pos == 0 and data.startswith(codecs.BOM_UTF8):
            self.base += len(codecs.BOM_UTF8)   # the decoder drops it: not text
        held = len(self.decoder.getstate()[0])   # bytes of a character the last block cut
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise ValidationError(f"{self.name} is not valid UTF-8 (byte {self.file_pos - held + exc.start}); "
                                  "only UTF-8 text is indexed") from None
        self.file_pos += len(data)
        self.eof = not data
        done, self.buf = self.buf[:self.pos], self.buf[self.pos:] + text
        self.base += len(done) if done.isascii() else len(done.encode("utf-8", "surrogatepass"))
        newline = done.rfind("\n")
        self.lines += done.count("\n")
        self.column = len(done) - newline - 1 if newline >= 0 else self.column + len(done)
        self.pos = 0
        return not self.eof

    def error(self, message: str, at: int | None = None) -> ValidationError:
        at = self.pos if at is None else at
        newline = self.buf.rfind("\n", 0, at)
        line = self.lines + self.buf.count("\n", 0, at) + 1
        column = at - newline if newline >= 0 else self.column + at + 1
        return ValidationError(f"{self.name} is not valid JSON: {message} (line {line}, column {column})")

    def peek(self) -> str:
        """The next character after whitespace ("" at the end of the file)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def take(self, char: str, message: str) -> None:
        if self.peek() != char:
            raise self.error(message)
        self.pos += 1

    def offset(self) -> int:
        """The byte offset in the file of the next character."""
        done = self.buf[:self.pos]
        return self.base + (len(done) if done.isascii() else len(done.encode("utf-8", "surrogatepass")))

    def value(self, depth: int = 0) -> Any:
        """The next value, whole; ``depth``: how deep in the file it is."""
        if self.peek() == "":
            raise self.error("Expecting value")
        while True:
            try:
                value, end = self.json.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if not self.eof:   # perhaps cut by the block's end: read on, and parse again
                    self._more(max(_CHUNK, len(self.buf)))
                    continue
                raise self.error(exc.msg, exc.pos) from None
            except RecursionError:
                raise ValidationError(f"{self.name} is nested more than {MAX_JSON_DEPTH} levels deep") from None
            if end == len(self.buf) and not self.eof:   # a number may go on in the next block
                self._more()
                continue
            self.pos = end
            if not self.checked and depth + json_depth(value) > MAX_JSON_DEPTH:
                raise ValidationError(f"{self.name} is nested more than {MAX_JSON_DEPTH} levels deep")
            return value

    def members(self, depth: int) -> Iterator[str]:
        """The keys of the object that starts here, each once its value is to be read."""
        self.take("{", "Expecting value")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                raise self.error("Expecting property name enclosed in double quotes")
            key = self.value(depth)
            self.take(":", "Expecting ':' delimiter")
            yield key
            if self.peek() == ",":
                self.pos += 1
                continue
            self.take("}", "Expecting ',' delimiter")
            return

    def items(self, depth: int) -> Iterator[Any]:
        """The items of the list that starts here."""
        self.take("[", "Expecting value")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield self.value(depth)
            if self.peek() == ",":
                self.pos += 1
                continue
            self.take("]", "Expecting ',' delimiter")
            return


@dataclass
class StreamedList:
    """A list in the file: iterating it reads its items from the file (each time anew)."""

    fd: int
    name: str
    offset: int
    size: int
    all_objects: bool

    def __iter__(self) -> Iterator[Any]:
        return _Reader(self.fd, self.name, self.offset, checked=True).items(3)

    def __len__(self) -> int:
        return self.size


def read_object(fd: int, name: str, streamed: str) -> Any:
    """The file's value; if it is an object, its member ``streamed``, when an object, has each of its lists as
    a :class:`StreamedList` (read from ``fd`` when iterated: keep it open while they are used)."""
    reader = _Reader(fd, name)
    if reader.peek() != "{":
        value = reader.value()
    else:
        value = {}
        for key in reader.members(1):
            value[key] = _streamed(reader, fd, name) if key == streamed and reader.peek() == "{" else reader.value(1)
    if reader.peek() != "":
        raise reader.error("Extra data")
    return value


def _streamed(reader: _Reader, fd: int, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in reader.members(2):
        if reader.peek() != "[":
            out[key] = reader.value(2)
            continue
        offset, size, objects = reader.offset(), 0, True
        for item in reader.items(3):
            size += 1
            objects = objects and isinstance(item, dict)
        out[key] = StreamedList(fd, name, offset, size, objects)
    return out
