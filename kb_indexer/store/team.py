"""Who asked, and who may do what (docs/teams.md, "Who asked, and who may do what").

The *asker* recorded with every query, attempt and feedback mark is the SQL function ``kb_asker()``, the same name
on both engines, so a statement records it in the row it writes:

- SQLite: registered on each connection (:func:`register`): the name of :func:`on_behalf` in force, else
  ``$KBINDEX_USER``, else the OS user. Anyone who can write the file can write any name into it: on one person's
  file the name is a label, not a proof.
- PostgreSQL: a server function (:data:`SERVER_SCHEMA`) returning ``session_user``, the role that logged in, which
  ``SET ROLE`` and ``KBINDEX_USER`` do not change. A service that answers for others (``kbindex mcp --transport
  http``, whose asker is the bearer token's name) records ``role/name``: it sets ``kbindex.on_behalf`` on its
  session (:func:`on_behalf`: each connection opened in the block, a pooled one until it is given back), and the
  role part stays the server's own, so the name says on whose behalf the service asked without letting it pass
  for a member's role.

Roles (:func:`role`): an SQLite file's user is its ``owner``. On PostgreSQL the owner of the index's tables (or a
superuser) is the ``owner``; a member of the role ``kb_curator`` is a ``curator``; a role that may insert history
is a ``member``; a role that may only read is a ``reader``. :func:`require_role` refuses a command to a role below
the one it needs (``not_allowed``; a reader's writes fail as ``read_only``, as before). The server enforces the same
rules for statements that do not come through kbindex (``psql``): row-level security lets a member delete only its
own history and feedback, and change no one else's mark (:data:`SERVER_SCHEMA`).
"""

from __future__ import annotations

import contextvars
import getpass
import json
import sqlite3
from contextlib import contextmanager
from typing import Iterator

from kb_indexer import settings
from kb_indexer.errors import NotAllowedError, ReadOnlyError
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engines import engine_of

USER_ENV = "KBINDEX_USER"
UNKNOWN = "unknown"
CURATOR_ROLE = "kb_curator"
ROLES = ("reader", "member", "curator", "owner")

_on_behalf: contextvars.ContextVar[str | None] = contextvars.ContextVar("kbindex_on_behalf", default=None)


@contextmanager
def on_behalf(name: str | None) -> Iterator[None]:
    """While the block runs (in this thread or task), what is recorded is asked on behalf of ``name``: an SQLite
    index records ``name``; a PostgreSQL index ``role/name`` (connections opened in the block carry it)."""
    token = _on_behalf.set(name or None)
    try:
        yield
    finally:
        _on_behalf.reset(token)


def behalf() -> str | None:
    """The name of :func:`on_behalf` in force, if any."""
    return _on_behalf.get()


def local_user() -> str:
    """The asker of an SQLite index: on behalf of whom a service asks, else ``$KBINDEX_USER``, else the OS user."""
    name = _on_behalf.get() or settings.text(USER_ENV)
    if name:
        return name
    try:
        return getpass.getuser() or UNKNOWN
    except (OSError, KeyError):   # no user name in the environment or the password database
        return UNKNOWN


def register(conn: sqlite3.Connection) -> None:
    """``kb_asker()`` on an SQLite connection (read at each call: :func:`on_behalf` applies per request)."""
    conn.create_function("kb_asker", 0, local_user)


def current_asker(conn: Connection) -> str:
    """The name this connection records as the asker."""
    return str(conn.execute("SELECT kb_asker()").fetchone()[0])


def principal(conn: Connection, asker: str) -> str:
    """Whose evidence an asker's is, for the learning policy's count of distinct askers: on PostgreSQL the login
    role (``role/name`` is a service's role answering for ``name``, and any member could set such a name on its
    own session), on SQLite the name."""
    return asker.split("/", 1)[0] if shared(conn) else asker


def trusted(conn: Connection, principals: set[str]) -> set[str]:
    """Of these principals, those whose word is enough for the learning policy on its own: on PostgreSQL the
    curators and the owner (they could approve the item anyway) and ``unknown`` (rows recorded before askers
    were, which no role can write now); on SQLite none (anyone who writes the file may write any name)."""
    if not shared(conn) or not principals:
        return set()
    names = sorted(principals - {UNKNOWN})
    out = {UNKNOWN} & principals
    if names:
        out |= {r[0] for r in conn.execute(
            "SELECT r.rolname FROM pg_roles r WHERE r.rolname IN (SELECT value FROM json_each(?)) AND (r.rolsuper "
            "OR pg_has_role(r.rolname, (SELECT tableowner FROM pg_tables WHERE schemaname = current_schema() "
            "AND tablename = 'queries'), 'MEMBER') OR (EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ?) "
            "AND pg_has_role(r.rolname, ?, 'MEMBER')))", (json.dumps(names), CURATOR_ROLE, CURATOR_ROLE))}
    return out


def shared(conn: Connection) -> bool:
    """Whether the index is a team's (PostgreSQL: its members' marks on documents a question never returned need a
    second asker or a curator's review before they count) rather than one person's file."""
    return engine_of(conn).shared


def owns(conn: Connection, asker: str, name: str) -> bool:
    """Whether ``asker`` (as recorded) is ``name``'s: the name itself, or on PostgreSQL ``name/...`` too."""
    return asker == name or (shared(conn) and asker.startswith(name + "/"))


def role(conn: Connection) -> str:
    """'owner' | 'curator' | 'member' | 'reader' of this connection (an SQLite file: 'owner')."""
    if not shared(conn):
        return "owner"
    row = conn.execute(
        "SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = session_user) "
        "OR pg_has_role(session_user, (SELECT tableowner FROM pg_tables WHERE schemaname = current_schema() "
        "AND tablename = 'queries'), 'MEMBER'), "
        "EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ?) AND pg_has_role(session_user, ?, 'MEMBER'), "
        "has_table_privilege(session_user, 'queries', 'INSERT')", (CURATOR_ROLE, CURATOR_ROLE)).fetchone()
    owner, curator, writer = (bool(v) for v in row)
    return "owner" if owner else "curator" if curator else "member" if writer else "reader"


def require_role(conn: Connection, minimum: str, action: str) -> str:
    """This connection's role, if it is ``minimum`` or above; else ``not_allowed`` (a reader: ``read_only``)."""
    have = role(conn)
    if ROLES.index(have) >= ROLES.index(minimum):
        return have
    if have == "reader":
        raise ReadOnlyError(f"{action} writes to the index, and this database role may only read it "
                            "(docs/teams.md, Roles). Nothing was changed.")
    raise NotAllowedError(f"{action} needs the {minimum} role{' or the owner' if minimum == 'curator' else ''}; "
                          f"this database role ({current_asker(conn)}) is a {have} (docs/teams.md, \"Who asked, "
                          "and who may do what\"). Nothing was changed.")


#: What the PostgreSQL migration ``m006_authored`` creates: ``kb_asker()``, and row-level security on the history
#: and the feedback. Everyone reads every row. A row inserted names its writer (``asker = kb_asker()``, so a member
#: cannot write another's name). A member deletes only its own rows, and changes no mark of another's (the trigger
#: lets it update what its own commands update on everyone's rows: ``processed`` by learn, the path by a rename in
#: sync, the attempt, the last attempt time of a shared question). A curator (member of ``kb_curator``) and the
#: owner may do anything (the owner of a table is not subject to its policies).
SERVER_SCHEMA = """
CREATE FUNCTION kb_asker() RETURNS text LANGUAGE sql STABLE
    AS $$ SELECT session_user || COALESCE('/' || NULLIF(current_setting('kbindex.on_behalf', true), ''), '') $$;
CREATE FUNCTION kb_mine(asker text) RETURNS boolean LANGUAGE sql STABLE
    AS $$ SELECT asker = session_user OR left(asker, length(session_user) + 1) = session_user || '/' $$;
CREATE FUNCTION kb_is_curator() RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kb_curator')
        AND pg_has_role(session_user, 'kb_curator', 'MEMBER');
END $$;
CREATE FUNCTION kb_guard_marks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT kb_mine(OLD.asker) AND NOT kb_is_curator() AND (NEW.asker IS DISTINCT FROM OLD.asker
            OR NEW.helpful IS DISTINCT FROM OLD.helpful OR NEW.notes IS DISTINCT FROM OLD.notes
            OR NEW.excluded IS DISTINCT FROM OLD.excluded OR NEW.query_id IS DISTINCT FROM OLD.query_id) THEN
        RAISE EXCEPTION 'permission denied: % may not change the feedback of %', session_user, OLD.asker
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER query_feedback_guard BEFORE UPDATE ON query_feedback
    FOR EACH ROW EXECUTE FUNCTION kb_guard_marks();
CREATE FUNCTION kb_guard_asker() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.asker IS DISTINCT FROM OLD.asker AND NOT kb_is_curator() THEN
        RAISE EXCEPTION 'permission denied: % may not change who asked', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER queries_guard BEFORE UPDATE ON queries FOR EACH ROW EXECUTE FUNCTION kb_guard_asker();
CREATE TRIGGER query_attempts_guard BEFORE UPDATE ON query_attempts FOR EACH ROW EXECUTE FUNCTION kb_guard_asker();
ALTER TABLE queries ENABLE ROW LEVEL SECURITY;
ALTER TABLE query_attempts ENABLE ROW LEVEL SECURITY;
ALTER TABLE query_feedback ENABLE ROW LEVEL SECURITY;
CREATE POLICY kb_read ON queries FOR SELECT USING (true);
CREATE POLICY kb_insert ON queries FOR INSERT WITH CHECK (kb_mine(asker) OR kb_is_curator());
CREATE POLICY kb_update ON queries FOR UPDATE USING (true) WITH CHECK (true);
-- a question is deleted with every attempt and mark on it (cascades pass no policy): only by its asker, once no one
-- else's attempt or mark is on it
CREATE POLICY kb_delete ON queries FOR DELETE USING (kb_is_curator() OR (kb_mine(asker)
    AND NOT EXISTS (SELECT 1 FROM query_attempts a WHERE a.query_id = queries.id AND NOT kb_mine(a.asker))
    AND NOT EXISTS (SELECT 1 FROM query_feedback f WHERE f.query_id = queries.id AND NOT kb_mine(f.asker))));
CREATE POLICY kb_read ON query_attempts FOR SELECT USING (true);
CREATE POLICY kb_insert ON query_attempts FOR INSERT WITH CHECK (kb_mine(asker) OR kb_is_curator());
CREATE POLICY kb_update ON query_attempts FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY kb_delete ON query_attempts FOR DELETE USING (kb_mine(asker) OR kb_is_curator());
CREATE POLICY kb_read ON query_feedback FOR SELECT USING (true);
CREATE POLICY kb_insert ON query_feedback FOR INSERT WITH CHECK (kb_mine(asker) OR kb_is_curator());
CREATE POLICY kb_update ON query_feedback FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY kb_delete ON query_feedback FOR DELETE USING (kb_mine(asker) OR kb_is_curator());
"""


#: What the PostgreSQL migration ``m010_guards`` adds to :data:`SERVER_SCHEMA`, so that a member's own SQL cannot do
#: what its commands may not: record a mark, question or attempt under another name (its own rows too), exclude or
#: bring back excluded marks, rewrite another's question, change the learning policy, decide on review items, or
#: rewrite the schema's record (``_migrations``). ``kb_is_owner()``: the tables' owner (or a superuser);
#: ``kb_curates()``: a curator or the owner.
GUARDS = """
CREATE FUNCTION kb_is_owner() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT pg_has_role(session_user, (SELECT tableowner FROM pg_tables
        WHERE schemaname = current_schema() AND tablename = 'queries'), 'MEMBER') $$;
CREATE FUNCTION kb_curates() RETURNS boolean LANGUAGE sql STABLE AS $$ SELECT kb_is_curator() OR kb_is_owner() $$;
CREATE OR REPLACE FUNCTION kb_guard_marks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF kb_curates() THEN
        RETURN NEW;
    END IF;
    IF NEW.asker IS DISTINCT FROM OLD.asker OR NEW.excluded IS DISTINCT FROM OLD.excluded THEN
        RAISE EXCEPTION 'permission denied: % may not change who marked, or whether a mark is excluded', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT kb_mine(OLD.asker) AND (NEW.helpful IS DISTINCT FROM OLD.helpful OR NEW.notes IS DISTINCT FROM OLD.notes
            OR NEW.query_id IS DISTINCT FROM OLD.query_id) THEN
        RAISE EXCEPTION 'permission denied: % may not change the feedback of %', session_user, OLD.asker
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE OR REPLACE FUNCTION kb_guard_asker() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.asker IS DISTINCT FROM OLD.asker AND NOT kb_curates() THEN
        RAISE EXCEPTION 'permission denied: % may not change who asked', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE FUNCTION kb_guard_question() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.question IS DISTINCT FROM OLD.question OR NEW.context IS DISTINCT FROM OLD.context)
            AND NOT kb_mine(OLD.asker) AND NOT kb_curates() THEN
        RAISE EXCEPTION 'permission denied: % may not rewrite the question of %', session_user, OLD.asker
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER queries_question_guard BEFORE UPDATE ON queries FOR EACH ROW EXECUTE FUNCTION kb_guard_question();
CREATE FUNCTION kb_guard_decisions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF kb_curates() THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.decided_by IS NOT NULL OR NEW.status IN ('removed', 'rejected') THEN
            RAISE EXCEPTION 'permission denied: % may not record a decision on a learned item', session_user
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.decided_by IS DISTINCT FROM OLD.decided_by OR NEW.decided_at IS DISTINCT FROM OLD.decided_at
            OR NEW.removed_by IS DISTINCT FROM OLD.removed_by OR NEW.removed_at IS DISTINCT FROM OLD.removed_at
            OR (NEW.status IS DISTINCT FROM OLD.status AND (OLD.status IN ('removed', 'rejected')
                OR NEW.status IN ('removed', 'rejected'))) THEN
        RAISE EXCEPTION 'permission denied: % may not decide on, remove or restore a learned item', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER learned_items_decisions BEFORE INSERT OR UPDATE ON learned_items
    FOR EACH ROW EXECUTE FUNCTION kb_guard_decisions();
CREATE FUNCTION kb_guard_owned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT kb_is_owner() THEN
        RAISE EXCEPTION 'permission denied: only the owner of the index may change %', TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN COALESCE(NEW, OLD);
END $$;
CREATE TRIGGER team_settings_owned BEFORE INSERT OR UPDATE OR DELETE ON team_settings
    FOR EACH ROW EXECUTE FUNCTION kb_guard_owned();
CREATE TRIGGER migrations_owned BEFORE INSERT OR UPDATE OR DELETE ON _migrations
    FOR EACH ROW EXECUTE FUNCTION kb_guard_owned();
"""
