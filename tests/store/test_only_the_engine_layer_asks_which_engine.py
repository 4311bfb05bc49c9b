"""Code outside the engine layer (``store/engines/``, ``store/pg/`` and ``store/engine.py``, which defines it)
does not ask which engine a connection is on (``is_postgres(conn)``): it calls the connection's engine
(``kb_indexer.store.engines.engine_of``) or a store function that does. Features never ask; the store modules
still asking are a ratchet: ``MAX_ASKS`` only goes down."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kb_indexer"
ENGINE_LAYER = ("store/engines/", "store/pg/", "store/engine.py")
#: ``is_postgres(...)`` calls left in store modules outside the engine layer
MAX_ASKS = 11


def _asks() -> list[str]:
    """``file:line`` of every call of ``is_postgres`` outside the engine layer."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(ENGINE_LAYER):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name == "is_postgres":
                    out.append(f"{rel}:{node.lineno}")
    return out


def test_the_count_sees_calls_by_name_and_by_attribute_outside_the_engine_layer(tmp_path, monkeypatch):
    (tmp_path / "store" / "pg").mkdir(parents=True)
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "a.py").write_text("from x import is_postgres\nimport y\n\nis_postgres(c)\n"
                                             "y.is_postgres(c)\nf = is_postgres\n", encoding="utf-8")
    (tmp_path / "store" / "pg" / "b.py").write_text("is_postgres(c)\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert _asks() == ["index/a.py:4", "index/a.py:5"]


def test_features_never_ask_which_engine():
    assert [a for a in _asks() if not a.startswith("store/")] == []


def test_store_modules_ask_which_engine_at_most_the_budget():
    asks = _asks()
    assert len(asks) <= MAX_ASKS, f"{len(asks)} > {MAX_ASKS}: call the engine instead (engine_of): {asks}"
