"""Round trips a PostgreSQL-backed ``kb`` makes, read from libpq's own protocol trace."""

from __future__ import annotations


def round_trips(kb, tmp_path, fn):
    """(fn's result, the number of round trips libpq made while it ran, the messages it sent): a round trip
    ends at each ``Sync`` (extended protocol) or ``Query`` (simple protocol)."""
    trace = tmp_path / "libpq.trace"
    with trace.open("w") as f:
        kb.conn.raw.pgconn.trace(f.fileno())
        try:
            out = fn()
        finally:
            kb.conn.raw.pgconn.untrace()
    sent = [line.split("\t") for line in trace.read_text().splitlines()]
    frontend = [m for m in sent if len(m) > 3 and m[1] == "F"]
    return out, sum(1 for m in frontend if m[3].strip() in ("Sync", "Query")), "\n".join("\t".join(m) for m in frontend)
