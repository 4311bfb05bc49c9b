"""Helpers to build tiny knowledge bases inside tests."""

from __future__ import annotations

import json
from pathlib import Path


def write_doc(root: Path, rel: str, text: str, keywords: dict | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if keywords is not None:
        kw = dict(keywords)
        kw.setdefault("filepath", rel)
        path.with_name(path.stem + ".keywords.json").write_text(json.dumps(kw), encoding="utf-8")
    return path


def synced(kb, docs: dict[str, str]):
    """``kb`` (a KnowledgeBase) after writing ``docs`` (path: markdown) into its folder and a clean sync."""
    for rel, text in docs.items():
        write_doc(kb.kb_root, rel, text)
    assert kb.sync()["errors"] == []
    return kb


def kw(summary: str, *keywords: str, **extra) -> dict:
    data = {"summary": summary, "keywords": list(keywords)}
    data.update(extra)
    return data


def write_skills(root: Path, skills: dict[str, str | tuple[str, str]]) -> Path:
    """``<root>/<name>/SKILL.md`` for each ``name: description`` or ``name: (description, body)``."""
    for name, value in skills.items():
        description, body = value if isinstance(value, tuple) else (value, "")
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {json.dumps(description, ensure_ascii=False)}\n---\n{body}\n",
            encoding="utf-8")
    return root


def synced_skills(handle, folder: Path, skills: dict[str, str | tuple[str, str]]):
    """``handle`` (a KnowledgeBase) after writing ``skills`` under ``folder`` and a clean ``skills sync``."""
    assert handle.skills.sync([str(write_skills(folder, skills))])["errors"] == []
    return handle


def matched_names(out: dict) -> list[str]:
    """The names of the skills a ``skills match`` result matched, in order."""
    return [m["name"] for m in out["matched"]]


def skills_index(tmp_path: Path, skills: dict[str, str | tuple[str, str]]) -> Path:
    """A closed index at ``tmp_path/kbindex.db`` with ``skills`` written under ``tmp_path/skills`` and synced."""
    from kb_indexer.api import KnowledgeBase

    root = write_skills(tmp_path / "skills", skills)
    db = tmp_path / "kbindex.db"
    handle, _ = KnowledgeBase.init(db, tmp_path / "kb")
    assert handle.skills.sync([str(root)])["errors"] == []
    handle.close()
    return db


def die_at_read(monkeypatch, n: int):
    """Make the ``n``-th document read of a sync raise KeyboardInterrupt, as a kill between two reads would;
    returns the real reader, to put back with ``monkeypatch.setattr(reader, "load_document", real)``."""
    from kb_indexer.index import reader

    real, calls = reader.load_document, {"n": 0}

    def dies(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(reader, "load_document", dies)
    return real


def fulltext_bodies(conn) -> dict[str, str]:
    """``{filepath: indexed body}`` of the documents that have a full-text row, on either engine (through
    :mod:`kb_indexer.store.fulltext`, not FTS5's table)."""
    from kb_indexer.store import fulltext

    rows = conn.execute("SELECT id, filepath FROM documents").fetchall()
    bodies = fulltext.bodies(conn, [r[0] for r in rows])
    return {path: bodies[doc_id] for doc_id, path in rows if doc_id in bodies}


def fulltext_hits(conn, word: str) -> int:
    """How many documents' indexed bodies hold ``word`` as a whole word (any case), on either engine."""
    import re

    pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
    return sum(1 for body in fulltext_bodies(conn).values() if pattern.search(body))


HUB_FEW = 5
HUB_DEEP = 12   # hub terms that relate onward (depth 2)


def write_hub(kbdir, n: int) -> None:
    """``hub`` related to ``n`` distinct keywords (scores with ties, two types), ``few`` to HUB_FEW; a few tagged
    documents. Inside the root, so sync imports the relations."""
    sims = [{"keyword1": "hub", "keyword2": f"hub term {i:05d}", "type": "synonym" if i % 2 else "narrower",
             "context": f"hub relation {i % 7}", "score": round(0.5 + (i * 37 % 500) / 1000, 3)} for i in range(n)]
    sims += [{"keyword1": f"hub term {i:05d}", "keyword2": f"deep term {i}", "type": "synonym",
              "context": "deeper", "score": 1.0} for i in range(HUB_DEEP)]
    sims += [{"keyword1": "few", "keyword2": f"few term {i}", "type": "synonym", "context": "few", "score": 0.9}
             for i in range(HUB_FEW)]
    (kbdir / "similarities.json").write_text(json.dumps({"similarities": sims}), encoding="utf-8")
    for i in range(4):
        tags = ", ".join(["hub", f"hub term {i * 3:05d}", "few", f"few term {i}", f"deep term {i}"])
        (kbdir / f"doc-{i}.md").write_text(f"---\nkeywords: [{tags}]\n---\n# Doc {i}\n\nAbout hubs, part {i}.\n",
                                           encoding="utf-8")


def synced_hub(small, n: int):
    kb, kbdir = small
    write_hub(kbdir, n)
    out = kb.sync()
    assert out["errors"] == [], out["errors"]
    return kb


def login_role(pg_url: str, grants: list[str], prefix: str = "role") -> str:
    """A new PostgreSQL login role with ``grants`` (each formatted with ``{role}``) on the index's database;
    the URL that connects as it."""
    import uuid

    import psycopg

    role = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        for grant in grants:
            conn.execute(grant.format(role=role))
    scheme, rest = pg_url.split("://", 1)
    return f"{scheme}://{role}@{rest.split('@', 1)[1]}"


#: The grants of docs/teams.md ("Who asked, and who may do what"), each formatted with ``{role}``.
MEMBER = ["GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
          "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}"]
READER = ["GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"]


def curator_group(pg_url: str) -> None:
    """The server's ``kb_curator`` role, made once (roles are the server's, shared by every test database)."""
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'kb_curator'").fetchone() is None:
            try:
                conn.execute("CREATE ROLE kb_curator NOLOGIN")
            except psycopg.errors.DuplicateObject:   # another test made it meanwhile
                pass


def team_of(pg_url: str, project, run, members=("alice", "bob"), readers=()) -> dict[str, str]:
    """The bundled KB initialised and synced on ``pg_url`` by its owner, and login roles granted as docs/teams.md
    says: the ``members``, a curator ``carol`` and the ``readers``; name -> URL (``owner``: ``pg_url``)."""
    assert run("init", "--db", pg_url, "--kb", project / "knowledge-base").returncode == 0
    assert run("sync", "--db", pg_url).returncode == 0
    curator_group(pg_url)
    roles = {name: login_role(pg_url, list(MEMBER), name) for name in members}
    roles["carol"] = login_role(pg_url, MEMBER + ["GRANT kb_curator TO {role}"], "carol")
    roles.update({name: login_role(pg_url, list(READER), name) for name in readers})
    roles["owner"] = pg_url
    return roles
