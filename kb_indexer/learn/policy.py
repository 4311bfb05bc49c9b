"""The learning policy of an index: whether `learn` applies what it learns at once (``auto``) or holds it for a
person's review (``review``), and how much agreement an item needs (``min_askers`` distinct askers, no asker's
share of its evidence above ``max_share``). Stored in ``team_settings``; the defaults live here, and only here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from kb_indexer.errors import UsageError
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.team import shared

if TYPE_CHECKING:
    from kb_indexer.results import LearningPolicy as Policy

MODES = ("auto", "review")


# A single user's SQLite file learns from its one asker; a team's server asks for agreement.
DEFAULTS: dict[str, "Policy"] = {"sqlite": {"mode": "auto", "min_askers": 1, "max_share": 1.0},
                               "postgres": {"mode": "auto", "min_askers": 2, "max_share": 0.5}}


def defaults(conn: Connection) -> Policy:
    return dict(DEFAULTS["postgres" if shared(conn) else "sqlite"])  # type: ignore[return-value]


def read(conn: Connection) -> Policy:
    """The index's policy: what team_settings holds, the engine's defaults for the rest."""
    out = defaults(conn)
    stored = {r[0]: r[1] for r in conn.execute(
        "SELECT key, value FROM team_settings WHERE key IN ('mode', 'min_askers', 'max_share')")}
    if stored.get("mode") in MODES:
        out["mode"] = stored["mode"]
    try:
        out["min_askers"] = check_min_askers(int(stored["min_askers"])) if "min_askers" in stored else out["min_askers"]
        out["max_share"] = check_max_share(float(stored["max_share"])) if "max_share" in stored else out["max_share"]
    except (UsageError, ValueError):
        pass  # an edited row that is not valid: the defaults stand for it
    return out


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise UsageError(f"the learning mode must be one of: {', '.join(MODES)}; got {mode!r}")
    return mode


def check_min_askers(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UsageError(f"min_askers must be a whole number of at least 1; got {n!r}")
    return n


def check_max_share(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < x <= 1:
        raise UsageError(f"max_share must be a number above 0 and at most 1; got {x!r}")
    return float(x)


def write(conn: Connection, mode: str | None = None, min_askers: int | None = None,
          max_share: float | None = None) -> Policy:
    """Set what is given (all of it checked before anything is written; in the caller's transaction)."""
    values: dict[str, str] = {}
    if mode is not None:
        values["mode"] = check_mode(mode)
    if min_askers is not None:
        values["min_askers"] = str(check_min_askers(min_askers))
    if max_share is not None:
        values["max_share"] = repr(check_max_share(max_share))
    if not values:
        raise UsageError("give what to set: a mode (--set auto|review), --min-askers or --max-share")
    conn.executemany("INSERT INTO team_settings (key, value) VALUES (?, ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value", list(values.items()))
    return read(conn)


def supported(askers: Mapping[str, int], policy: Mapping[str, Any]) -> bool:
    """Whether evidence from these askers (asker -> how many of the item's feedback rows are theirs) is enough
    under the policy: at least ``min_askers`` distinct askers, and no asker above ``max_share`` of the evidence
    (with ``min_askers`` 1, one asker alone is enough: the share is then not asked for)."""
    counts = {a: n for a, n in askers.items() if n > 0}
    total = sum(counts.values())
    if not counts or len(counts) < int(policy["min_askers"]):
        return False
    if len(counts) == 1 and int(policy["min_askers"]) <= 1:
        return True
    return max(counts.values()) / total <= float(policy["max_share"])
