"""YAML front matter, read one way for documents, enrichment and skills.

The front matter is the block between a first line ``---`` (after a byte-order mark) and the next line
``---`` or ``...``; a ``---`` further down is markdown (a thematic break), never front matter. Line ends
(CRLF, CR) become LF once a block is found. A text whose first line is not ``---`` costs one regular
expression match: no YAML is loaded.

The block is parsed with PyYAML's safe loader (libyaml's when installed), so only plain data is built,
never a Python object. Bounds, each a :class:`FrontMatterError` naming the problem (and the line): at
most ``MAX_FRONT_MATTER_BYTES``; no aliases (a few hundred bytes of nested aliases expand to millions of
items); nesting at most ``MAX_JSON_DEPTH`` deep (checked on the parser's events before libyaml composes
the block: its recursive composer crashes the process on ~30,000 nested ``[`` or ``- ``).

``typed=False`` (documents) keeps every scalar as the text written (``3.10``, ``no``, ``2024-05-01`` stay
strings; ``~``, ``null`` and an empty value are None; tags are not applied): only ``str``, ``None``,
``list`` and ``dict`` are built. ``typed=True`` (skills' metadata) resolves numbers, booleans and dates
as YAML's safe loader does.
"""

from __future__ import annotations

import re
from typing import Any, Hashable

from kb_indexer.limits import MAX_JSON_DEPTH

MAX_FRONT_MATTER_BYTES = 256 * 1024
_OPEN = re.compile(r"[ \t]*---[ \t]*(?:\r|\n|$)")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
# Every level of nesting needs one of these: fewer of them in a block bound its depth.
_NESTING = "[{-?:"
_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class FrontMatterError(ValueError):
    """A front-matter block that cannot be read; ``str()`` is the reason."""


def split_front_matter(text: str) -> tuple[str | None, str]:
    """``(block, body)``: the YAML block (None when the text has none) and the text after it.

    A first line ``---`` that no later line closes raises :class:`FrontMatterError`.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if not _OPEN.match(text):
        return None, text
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    start = text.index("\n") + 1 if "\n" in text else len(text)
    close = _CLOSE.search(text, start)
    if close is None:
        raise FrontMatterError("the front matter is not closed by a line '---'")
    return text[start:close.start()], text[close.end() + 1:]


def load_front_matter(block: str, *, typed: bool = False, where: str = "front matter") -> dict[str, Any]:
    """The block as a mapping (``{}`` for an empty block); raises :class:`FrontMatterError`."""
    if len(block) > MAX_FRONT_MATTER_BYTES // 4 and len(block.encode("utf-8")) > MAX_FRONT_MATTER_BYTES:
        raise FrontMatterError(f"the {where} is larger than {MAX_FRONT_MATTER_BYTES} bytes")
    import yaml  # lazy: PyYAML, only for texts with a front-matter block

    try:
        if "*" in block or sum(block.count(c) for c in _NESTING) > MAX_JSON_DEPTH:
            _check_events(yaml, block, where)
        if typed:
            data = yaml.load(block, Loader=_loader(True))  # noqa: S506 - a safe loader
        else:  # composed by libyaml, built here: only str, None, list and dict, whatever the tags say
            node = yaml.compose(block, Loader=_loader(False))
            data = None if node is None else _as_text(yaml, node)
    except yaml.YAMLError as exc:
        raise FrontMatterError(_yaml_message(exc)) from None
    except (ValueError, OverflowError) as exc:   # a typed value PyYAML cannot build: 2001-13-45, !!int abc
        raise FrontMatterError(f"a value in the {where} cannot be read: {str(exc)[:200]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontMatterError(f"the {where} is not a mapping of keys to values")
    return data


def _check_events(yaml: Any, block: str, where: str) -> None:
    """Refuse aliases and nesting deeper than ``MAX_JSON_DEPTH`` from the parser's events (libyaml's
    parser is a loop; its composer recurses, and crashes the process ~30,000 levels down)."""
    depth = 0
    for event in yaml.parse(block, Loader=_loader(True)):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.MarkedYAMLError(None, None, f"YAML aliases are not allowed in {where}", event.start_mark)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise yaml.MarkedYAMLError(None, None, f"the {where} is nested more than {MAX_JSON_DEPTH} "
                                           "levels deep", event.start_mark)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _as_text(yaml: Any, node: Any) -> Any:
    """A composed node as plain data, scalars as the text written (nulls None). Depth is bounded (see
    :func:`_check_events`): the recursion is too."""
    if isinstance(node, yaml.ScalarNode):
        return None if node.tag == _NULL_TAG else node.value
    if isinstance(node, yaml.SequenceNode):
        return [_as_text(yaml, item) for item in node.value]
    out = {}
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            raise yaml.MarkedYAMLError(None, None, "a key must be text, not a list or mapping", key.start_mark)
        text = _as_text(yaml, key)
        if text in out:
            raise _twice(yaml, text, key)
        out[text] = _as_text(yaml, value)
    return out


def _twice(yaml: Any, key: Any, node: Any) -> Exception:
    """A key written twice in one mapping: YAML says keys are unique, and which value was meant is a guess."""
    error: Exception = yaml.MarkedYAMLError(None, None, f"the key {key!r} is written twice", node.start_mark)
    return error


def _yaml_message(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    at = f" (line {mark.line + 2}, column {mark.column + 1})" if mark is not None else ""  # line 1 is '---'
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"invalid YAML front matter{at}: {problem}"


_LOADERS: dict[bool, Any] = {}


def _distinct_keys_mapping(self: Any, node: Any, deep: bool = False) -> dict[Hashable, Any]:
    """The safe constructor's mapping, refusing a key written twice (PyYAML would keep the last value
    silently; YAML says keys are unique) and two keys written differently that are one key once read
    (``1`` and ``true``, ``1`` and ``1.0``: Python's dict would keep one value silently)."""
    import yaml  # lazy: PyYAML, only for texts with a front-matter block

    seen: set[tuple[str, str]] = set()
    for k, _ in node.value:   # as written (a merge key's mapping is merged below: its keys may be overridden)
        if isinstance(k, yaml.ScalarNode) and k.tag != _MERGE_TAG:
            if (k.tag, k.value) in seen:
                raise _twice(yaml, k.value, k)
            seen.add((k.tag, k.value))
    mapping = yaml.constructor.SafeConstructor.construct_mapping(self, node, deep=deep)
    written = {(k.tag, k.value) for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
    if len(mapping) < len(written):
        first = next(k for k, _ in node.value if isinstance(k, yaml.ScalarNode))
        raise yaml.MarkedYAMLError(None, None, "two keys are the same key once read (e.g. 1 and true, or 1 "
                                   f"and 1.0): {sorted(v for _, v in written)[:6]}", first.start_mark)
    return mapping


def _loader(typed: bool) -> Any:
    """A safe loader class (libyaml's when installed); ``typed=False`` resolves only nulls (the tag
    :func:`_as_text` looks at). Built once."""
    if typed not in _LOADERS:
        import yaml  # lazy: PyYAML, only for texts with a front-matter block

        base = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
        attrs: dict[str, Any] = {}
        if typed:
            attrs["construct_mapping"] = _distinct_keys_mapping
        else:
            attrs["yaml_implicit_resolvers"] = {
                first: [(tag, rx) for tag, rx in resolvers if tag == _NULL_TAG]
                for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
        _LOADERS[typed] = type("FrontMatterLoader", (base,), attrs)
    return _LOADERS[typed]
