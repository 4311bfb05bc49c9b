"""The one ``.env`` file kbindex reads, and what it may set.

Settings come from the real environment, plus at most one file: the one named by
``KBINDEX_ENV_FILE`` (read from the real environment) if set, else ``.env`` in the
current directory (never a parent's, never one beside the index). ``KBINDEX_NO_DOTENV``
skips it. The file never overrides a variable that is already set, and:

* it may set only :data:`ALLOWED` (the LLM and embedding settings: backend, model,
  timeout, retries, token cap, API keys, server URLs). Any other ``KBINDEX_*`` name in it,
  ``KBINDEX_LLM_PLUGINS`` above all (it names code to import), is ignored with a warning;
  other names (``PATH``, ``HTTPS_PROXY``, another tool's settings) are not read;
* ``${VAR}`` in a value stays literal text (no expansion from the environment, which
  would copy a real secret into a URL or a model name);
* it is ignored, with a warning, when it is a symbolic link, not a regular file, not
  owned by the current user, writable by group or others, larger than
  :data:`~kb_indexer.limits.MAX_ENV_FILE_BYTES` or not UTF-8 (as ssh treats its config); a UTF-8
  byte-order mark at its start is skipped.

Which server may receive which key is decided in :mod:`kb_indexer.llm.config`, from
:attr:`EnvFile.values` (a server named by this file gets only a key this file names).
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kb_indexer import settings
from kb_indexer import notices
from kb_indexer.limits import MAX_ENV_FILE_BYTES

ENV_FILE_VAR = "KBINDEX_ENV_FILE"
NO_DOTENV_VAR = "KBINDEX_NO_DOTENV"

#: Per backend: the variables naming its server (first set wins) and those holding its API key.
SERVERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ollama": (("OLLAMA_HOST",), ("OLLAMA_API_KEY",)),
    "gemini": (("KBINDEX_GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"), ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    "openai": (("KBINDEX_OPENAI_BASE_URL",), ("OPENAI_API_KEY",)),
}

#: The only names a ``.env`` may set: the ``KBINDEX_*`` settings declared so, and the servers' URLs and keys.
ALLOWED = frozenset({*settings.dotenv_names(), *(name for urls, keys in SERVERS.values() for name in urls + keys)})

#: Names that make kbindex load code: why they are refused gets its own words.
CODE_KEYS = frozenset({"KBINDEX_LLM_PLUGINS"})


@dataclass(frozen=True)
class EnvFile:
    """The file read (None: none), every allowed value in it, and the names it set in ``os.environ``."""

    path: Path | None = None
    values: dict[str, str] = field(default_factory=dict)
    applied: frozenset[str] = frozenset()


def _printable(text: str) -> str:
    """``text`` with control characters escaped (names and paths from a file reach the terminal)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


_warned: set[str] = set()


def warn(message: str) -> None:
    """One warning on stderr (each message once per process, however often the settings are resolved)."""
    if message not in _warned:
        _warned.add(message)
        notices.warn(_printable(message))


def forget_warnings() -> None:
    """Warn afresh (tests)."""
    _warned.clear()


def _candidate() -> Path | None:
    """The file to read: ``KBINDEX_ENV_FILE``, else ``./.env`` when there is one."""
    named = settings.text(ENV_FILE_VAR)
    if named:
        path = Path(named).expanduser().absolute()
        if not os.path.lexists(path):
            warn(f"{ENV_FILE_VAR} names {path}, which does not exist: no settings read from it")
            return None
        return path
    try:
        path = Path.cwd() / ".env"
        is_folder = stat.S_ISDIR(os.lstat(path).st_mode)  # a virtualenv is often named .env: not ours
    except OSError:  # no ./.env, or the current directory was removed
        return None
    return None if is_folder else path


def _unsafe(st: os.stat_result) -> str | None:
    """Why a file with this status must not be trusted (None: it may be read)."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    posix = os.name == "posix"  # elsewhere owner and mode bits do not mean this
    if posix and st.st_uid != os.geteuid():
        return "is not owned by the current user"
    if posix and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by group or others (chmod go-w)"
    if st.st_size > MAX_ENV_FILE_BYTES:
        return f"is larger than {MAX_ENV_FILE_BYTES // 1024} KiB"
    return None


def _read(path: Path) -> str | None:
    """The text of ``path`` if it is safe to trust, else None (with a warning saying why)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        reason = _unsafe(os.lstat(path))
        if reason is None:
            fd = os.open(path, flags)  # O_NOFOLLOW: a symlink swapped in after lstat is refused here
            with os.fdopen(fd, "rb") as handle:
                reason = _unsafe(os.fstat(handle.fileno()))  # the file opened, not the name
                data = handle.read(MAX_ENV_FILE_BYTES + 1) if reason is None else b""
            if reason is None and len(data) > MAX_ENV_FILE_BYTES:
                reason = f"is larger than {MAX_ENV_FILE_BYTES // 1024} KiB"
            if reason is None:
                return data.decode("utf-8-sig")  # a BOM (Windows editors) is not part of the first name
    except UnicodeDecodeError:
        reason = "is not UTF-8 text"
    except OSError as exc:
        reason = f"cannot be read ({exc.strerror or type(exc).__name__})"
    warn(f"{path} {reason}: ignored, no settings read from it")
    return None


def _refusal(key: str) -> str:
    if key in CODE_KEYS:
        return "it names code to load: set it in the real environment"
    return "a .env may set only the LLM and embedding settings"


def _parse(path: Path, text: str) -> dict[str, str]:
    """The allowed values of ``text`` (a warning names each refused ``KBINDEX_*`` name)."""
    from dotenv import dotenv_values  # lazy: python-dotenv, only when a .env file exists

    values: dict[str, str] = {}
    for key, value in dotenv_values(stream=io.StringIO(text), interpolate=False).items():
        if value is None:
            continue
        if key not in ALLOWED:
            if key.upper().startswith("KBINDEX_"):
                warn(f"{path}: {key} ignored ({_refusal(key.upper())})")
            continue
        if "\0" in value:
            warn(f"{path}: {key} ignored (its value contains a NUL character)")
            continue
        values[key] = value
    return values


def read_env_file() -> EnvFile:
    """Read the ``.env`` (see the module docstring) and set its allowed values that are not set yet."""
    if settings.flag(NO_DOTENV_VAR):
        return EnvFile()
    path = _candidate()
    text = _read(path) if path is not None else None
    if text is None or path is None:
        return EnvFile()
    values = _parse(path, text)
    applied = set()
    for key, value in values.items():
        if key not in os.environ:
            os.environ[key] = value
            applied.add(key)
    return EnvFile(path, values, frozenset(applied))
