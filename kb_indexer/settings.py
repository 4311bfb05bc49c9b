"""Every ``KBINDEX_*`` environment variable kbindex reads, declared once: its name, type, default and what it
sets, and whether a ``.env`` may set it (:mod:`kb_indexer.llm.envfile`). The modules that use one read it with
:func:`raw`, :func:`text` or :func:`flag`, at each call (never cached: a ``.env`` is applied to the environment
after start-up, and tests set variables between calls); how a bad value is answered stays with the module
that uses it. The table of docs/configuration-and-security.md is :func:`markdown_table` (a test compares them).

Imports nothing but :mod:`os` and :mod:`typing` (loaded already): most commands read a setting on their way
to the first result.
"""

from __future__ import annotations

import os
from typing import Union

#: A default as the code uses it; None: no single value (the description says what is used instead).
Default = Union[str, int, float, None]

#: The types a setting may have (the docs' "type" column).
KINDS = ("text", "flag", "integer", "seconds", "path", "paths", "path or URL", "URL", "names")


class Setting:
    """One ``KBINDEX_*`` variable. ``dotenv``: a ``.env`` may set it (else only the real environment)."""

    __slots__ = ("name", "kind", "default", "doc", "dotenv")

    def __init__(self, name: str, kind: str, default: Default, doc: str, dotenv: bool = False) -> None:
        self.name, self.kind, self.default, self.doc, self.dotenv = name, kind, default, doc, dotenv

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, {self.kind!r}, {self.default!r})"


_ALL = (
    # the index and the knowledge base
    Setting("KBINDEX_DB", "path or URL", None, "the index (as `--db`): a file or a `postgresql://` URL; else the "
            "first `kbindex.db` in the current folder or a parent, else `./kbindex.db`"),
    Setting("KBINDEX_KB", "path", None, "the knowledge-base root (as `--kb`); else the root stored by `init`, "
            "else `knowledge-base/` beside the index"),
    Setting("KBINDEX_MAX_DOC_BYTES", "integer", 4 * 1024 * 1024, "bytes of a document that are indexed (at "
            "least 1024); a larger one is indexed up to the limit, with a warning"),
    Setting("KBINDEX_READ_SECONDS", "seconds", 30.0, "how long reading one file may take in `sync`; a read "
            "that does not return is reported in `errors` and skipped"),
    Setting("KBINDEX_SYNC_WORKERS", "integer", None, "reader processes of a `sync` (`0`: read in the writing "
            "process; at most 32); else none below 1,000 documents to read, else one fewer than the CPUs, at most 3"),
    Setting("KBINDEX_SPARSE_MIN_DOCS", "integer", 10_000, "documents from which the sparse full-text index is "
            "kept (`0`: always)"),
    Setting("KBINDEX_BUSY_TIMEOUT", "seconds", 30.0, "how long a command waits for a lock another kbindex "
            "process holds before it answers `busy` (a fraction is fine)"),
    Setting("KBINDEX_USER", "text", None, "the asker recorded on an SQLite index; else the OS user (PostgreSQL "
            "records the role that logged in)"),
    Setting("KBINDEX_DEBUG", "flag", None, "any value: an internal error is raised with its traceback instead "
            "of answered as `internal`"),
    # search, context, skills, chat and MCP
    Setting("KBINDEX_RERANK", "text", "off", "the second stage of `query` (as `--rerank`): `llm`, the http(s) "
            "URL of a `/rerank` endpoint, or `off`"),
    Setting("KBINDEX_RERANK_MODEL", "text", None, "the model a `/rerank` endpoint is asked for"),
    Setting("KBINDEX_CONTEXT_WINDOW", "integer", None, "the model's context window in tokens (as `--window`, "
            "256 to 10,000,000); else by model or backend"),
    Setting("KBINDEX_SKILLS", "paths", None, "skills directories (separated by `:`) synced and matched "
            "besides the remembered ones, never remembered themselves"),
    Setting("KBINDEX_CHAT_DB", "path", None, "the chat's store; else `$XDG_DATA_HOME/kbindex/chat.db`"),
    Setting("KBINDEX_CHAT_HISTORY", "path", None, "the chat's input history; else "
            "`$XDG_DATA_HOME/kbindex/chat_history`"),
    Setting("KBINDEX_MCP_TOKEN", "text", None, "the bearer tokens of `kbindex mcp --transport http`, one "
            "`NAME:TOKEN` a line (`--token-file` wins)"),
    # LLM and embedding backends
    Setting("KBINDEX_LLM_BACKEND", "text", "ollama", "the LLM backend (as `--llm-backend`): `ollama`, "
            "`gemini`, `openai`, a plugin's or `none`; optional LLM steps run only when it is named",
            dotenv=True),
    Setting("KBINDEX_LLM_MODEL", "text", None, "the LLM model (as `--llm-model`); else the backend's default",
            dotenv=True),
    Setting("KBINDEX_LLM_TIMEOUT", "seconds", 60.0, "how long one LLM call may take in all, retries included "
            "(as `--llm-timeout`)", dotenv=True),
    Setting("KBINDEX_LLM_RETRIES", "integer", 2, "retries of an LLM call on 429, 5xx and connection errors",
            dotenv=True),
    Setting("KBINDEX_LLM_MAX_TOKENS", "integer", 1024, "the most tokens of any LLM answer", dotenv=True),
    Setting("KBINDEX_EMBED_BACKEND", "text", None, "the embedding backend (as `--embed-backend`): `ollama`, "
            "`gemini`, `openai`, `local` or `none`; else the index's, else `ollama`", dotenv=True),
    Setting("KBINDEX_EMBED_MODEL", "text", None, "the embedding model (as `--embed-model`); else the index's, "
            "else the backend's default", dotenv=True),
    Setting("KBINDEX_OPENAI_BASE_URL", "URL", "http://127.0.0.1:8080/v1", "the server of the `openai` "
            "backend (any OpenAI-compatible one)", dotenv=True),
    Setting("KBINDEX_GEMINI_BASE_URL", "URL", None, "another endpoint for the `gemini` backend (proxies, "
            "tests); else `GOOGLE_GEMINI_BASE_URL`, else Google's", dotenv=True),
    Setting("KBINDEX_LLM_PLUGINS", "names", None, "modules or `.py` files (separated by commas) that register "
            "more LLM backends"),
    Setting("KBINDEX_ENV_FILE", "path", None, "the `.env` to read; else `.env` in the current folder"),
    Setting("KBINDEX_NO_DOTENV", "flag", None, "any value: no `.env` is read"),
)

#: Every setting by name, in the order of the documentation's table.
SETTINGS: dict[str, Setting] = {s.name: s for s in _ALL}


def raw(name: str) -> str:
    """The value of the declared variable ``name`` as the environment holds it now ("" when unset)."""
    if name not in SETTINGS:
        raise KeyError(f"{name} is not declared in kb_indexer.settings")
    return os.environ.get(name, "")


def text(name: str) -> str:
    """The value of ``name`` without surrounding whitespace ("" when unset or blank)."""
    return raw(name).strip()


def flag(name: str) -> bool:
    """Whether ``name`` is set to anything but the empty string."""
    return bool(raw(name))


def dotenv_names() -> frozenset[str]:
    """The ``KBINDEX_*`` names a ``.env`` may set."""
    return frozenset(s.name for s in _ALL if s.dotenv)


def _shown(default: Default) -> str:
    if default is None:
        return "-"
    if isinstance(default, float) and default.is_integer():
        default = int(default)
    return f"`{default:,}`" if isinstance(default, int) else f"`{default}`"


def markdown_table() -> str:
    """The documentation's table of every setting (docs/configuration-and-security.md holds it as it is)."""
    rows = ["| variable | type | default | what it sets | `.env` |", "|---|---|---|---|---|"]
    rows += [f"| `{s.name}` | {s.kind} | {_shown(s.default)} | {s.doc} | {'yes' if s.dotenv else 'no'} |"
             for s in _ALL]
    return "\n".join(rows) + "\n"
