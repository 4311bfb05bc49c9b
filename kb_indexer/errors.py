"""Exceptions with an exit code and a machine-readable code.

Every error a user can cause is a ``KbError``: the CLI prints its message to
stderr (as a JSON object under ``--format json``) and exits with ``exit_code``.

The codes (documented in docs/agents.md, "Errors"; SQLite and file-system failures are mapped to them in
one place, :mod:`kb_indexer.store.errors`):

=================  ====  ===========================================================
code               exit  meaning
=================  ====  ===========================================================
usage              2     wrong options or arguments
invalid_input      1     a file, argument or JSON value kbindex cannot accept
not_found          1     a document, keyword, query or file that does not exist
outside_kb         1     a path resolving outside the knowledge-base root
not_empty          1     ``import`` into an index with content, without ``--force``
would_remove_all   1     ``sync`` finding none of the indexed documents, without ``--force``
would_repoint      1     ``init --kb`` pointing an index holding documents elsewhere, without ``--force``
not_initialised    1     no index here: run ``kbindex init``
bad_database       1     the file is damaged, not SQLite, or another application's database
schema             1     the index was written by a newer kbindex
busy               1     another kbindex process held the write lock too long
read_only          1     the index (or its folder) cannot be written
not_allowed        1     the database role may not do this (a member's team-wide command: curator or owner)
disk_full          1     the disk (or a quota) is full
io_error           1     the disk or filesystem failed reading or writing the index
db_unavailable     1     a PostgreSQL server that cannot be reached or used (address, password, database)
write_failed       1     an ``--output`` file (export, export-similarities, suggest-similarities) could not be written
missing_extra      1     a feature needs an optional extra that is not installed
llm_*              1     an LLM backend failed where no fallback applies
rerank_*           1     ``query --rerank URL``: the endpoint failed or answered badly
embedding_mismatch 1     the query's vectors are of another size than the index's
already_running    1     ``model serve``: a server already answers there
model_server_failed 1    ``model serve``: the server exited
doctor_problems    1     ``doctor --strict`` found problems
internal           1     a bug in kbindex: please report it
=================  ====  ===========================================================
"""

from __future__ import annotations

from typing import Any


class KbError(Exception):
    """An error caused by input or state, reported without a traceback."""

    exit_code = 1
    code = "error"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            out["details"] = self.details
        return out


class UsageError(KbError):
    """Bad usage: wrong combination of options or arguments (exit 2)."""

    exit_code = 2
    code = "usage"


class ValidationError(KbError):
    code = "invalid_input"


class NotFoundError(KbError):
    code = "not_found"


class NotInitialisedError(KbError):
    code = "not_initialised"


class SchemaError(KbError):
    code = "schema"


class BadDatabaseError(KbError):
    code = "bad_database"


class BusyError(KbError):
    """Another process held the write lock past the busy timeout."""

    code = "busy"


class ReadOnlyError(KbError):
    code = "read_only"


class NotAllowedError(KbError):
    """The role may write, but not this: a team-wide command that needs the curator or owner role
    (kb_indexer.store.team)."""

    code = "not_allowed"


class DiskFullError(KbError):
    code = "disk_full"


class DbUnavailableError(KbError):
    """A PostgreSQL server that cannot be reached or used: its address, the password, the database name, a
    connection lost (not a disk failure: ``io_error`` is that)."""

    code = "db_unavailable"


class StorageError(KbError):
    """The disk or filesystem failed (SQLITE_IOERR, EIO): not a bug in kbindex, not the user's input."""

    code = "io_error"
