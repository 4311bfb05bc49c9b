"""Exceptions with an exit code and a machine-readable code.

Every error a user can cause is a ``KbError``: the CLI prints its message to
stderr (as a JSON object under ``--format json``) and exits with ``exit_code``.
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
