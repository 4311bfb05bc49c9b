"""Named migrations, the one rule both engines' schemas follow (``store/migrations.py`` for SQLite,
``store/pg/migrations.py`` for PostgreSQL): ordered by registration, each applied once and recorded in
``_migrations`` inside the caller's transaction, and an index that names a migration this kbindex does not know
(written by a newer one) refused before anything changes."""

from __future__ import annotations

from typing import Any, Callable, Collection, TypeVar

from kb_indexer.errors import SchemaError

C = TypeVar("C")
Migrations = list[tuple[str, Callable[[C], None]]]


def registrar(migrations: Migrations[C]) -> Callable[[Callable[[C], None]], Callable[[C], None]]:
    """A decorator that appends a migration function to ``migrations`` under its own name."""
    def migration(fn: Callable[[C], None]) -> Callable[[C], None]:
        migrations.append((fn.__name__, fn))
        return fn
    return migration


def refuse_newer(applied: Collection[str], migrations: Migrations[Any]) -> None:
    unknown = sorted(set(applied) - {name for name, _ in migrations})
    if unknown:
        raise SchemaError("This index was written by a newer kbindex (unknown migrations: "
                          + ", ".join(unknown) + "). Upgrade kbindex to use it.")


def apply(conn: Any, migrations: Migrations[Any], applied: Collection[str]) -> list[str]:
    """Run the migrations not in ``applied``, in order, recording each; the names run. Inside a transaction."""
    refuse_newer(applied, migrations)
    done = []
    for name, fn in migrations:
        if name not in applied:
            fn(conn)
            conn.execute("INSERT INTO _migrations (name) VALUES (?)", (name,))
            done.append(name)
    return done


def version(applied: list[str], migrations: Migrations[Any]) -> dict[str, Any]:
    """What ``db-stats`` and ``doctor`` show of the schema."""
    return {"migrations": len(applied), "latest": applied[-1] if applied else None, "known": len(migrations)}
