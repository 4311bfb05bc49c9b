"""Hostile files and arguments for the stress suite: each case gets a fresh small KB and runs
this checkout's kbindex with a timeout. A case fails if a command hangs, exits with `internal` (or a
traceback), writes non-JSON to stdout under --format json, exits other than the case expects, or leaves the
index failing integrity_check. Run through bench/stress.py (``--only hostile``)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from pathlib import Path

from bench.stress_common import Outcome, Section, integrity_problem, kb_run, problem_with, scalar

class Case:
    """A fresh small KB (three documents, synced) for one hostile case; ``run`` checks every command."""

    def __init__(self, name: str, root: Path):
        from kb_indexer.api import KnowledgeBase

        self.name, self.root = name, root
        self.kbdir = root / "knowledge-base"
        for rel, text, keys in (("a.md", "# Alpha\n\nalpha arrays.\n", ["alpha", "arrays"]),
                                ("sub/b.md", "# Beta\n\nbeta lists.\n", ["beta", "lists"]),
                                ("c.md", "# Gamma\n\ngamma.\n", None)):
            path = self.kbdir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if keys:
                path.with_name(path.stem + ".keywords.json").write_text(
                    json.dumps({"filepath": rel, "summary": "s", "keywords": keys}), encoding="utf-8")
        self.db = root / "kbindex.db"
        handle, _ = KnowledgeBase.init(self.db, self.kbdir)
        try:
            handle.sync()
        finally:
            handle.close()
        self.problems: list[str] = []
        self.commands = 0

    def run(self, *args, db: Path | None = None, timeout: float = 20.0, expect_exit: tuple = (0, 1, 2)) -> Outcome:
        out = kb_run(*args, db=db or self.db, cwd=self.root, timeout=timeout)
        self.commands += 1
        shown = " ".join(repr(a)[:40] if isinstance(a, bytes) else str(a)[:40] for a in args)
        problem = problem_with(out)
        if problem is None and out.code not in expect_exit:
            problem = f"exit {out.code}, expected {expect_exit}: {out.stderr[-200:]!r}"
        if problem:
            self.problems.append(f"{shown}: {problem}")
        return out

    def write(self, rel: str, text: str | bytes) -> Path:
        path = self.kbdir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
        return path


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def case_fifo(c: Case):
    os.mkfifo(c.kbdir / "pipe.md")
    os.mkfifo(c.kbdir / "d.keywords.json")
    c.write("d.md", "# D\n\ndelta\n")
    c.run("sync")
    c.run("add", c.kbdir / "pipe.md")


def case_socket(c: Case):
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(c.kbdir / "sock.md"))
        c.run("sync")
        c.run("add", c.kbdir / "sock.md")
    finally:
        sock.close()


def case_symlink_loop(c: Case):
    (c.kbdir / "loop").symlink_to(c.kbdir, target_is_directory=True)
    (c.kbdir / "x.md").symlink_to("y.md")
    (c.kbdir / "y.md").symlink_to("x.md")
    c.run("sync")
    c.run("add", c.kbdir / "x.md")


def case_invalid_utf8_name(c: Case):
    name = os.path.join(os.fsencode(c.kbdir), b"bad\xff\xfe.md")
    with open(name, "wb") as fh:
        fh.write(b"# Bad name\n\ninvalid name\n")
    c.run("sync")
    c.run("list-docs")
    c.run("query", "invalid name")


def case_invalid_utf8_argv(c: Case):
    c.run("query", b"\xff\xfe broken")
    c.run("search", b"\xff")
    c.run("relate", b"\xffa", b"b\xfe", "-t", "synonym", "-c", b"ctx\xff")
    c.run("add", os.fsencode(c.kbdir) + b"/nope\xff.md")


def case_deep_json_keywords(c: Case):
    c.write("d.md", "# D\n\ndelta\n")
    c.write("d.keywords.json", deep_json(5000))
    c.run("sync")


def case_deep_json_similarities(c: Case):
    (c.root / "similarities.json").write_text('{"similarities": ' + deep_json(5000) + "}")
    c.run("sync")
    c.run("import-similarities", c.root / "similarities.json")


def case_deep_json_import(c: Case):
    path = c.root / "deep.json"
    path.write_text('{"format": "kbindex-export", "tables": {"documents": ' + deep_json(5000) + "}}")
    c.run("import", path, "--force", expect_exit=(1,))


def case_huge_keywords(c: Case):
    c.write("d.md", "# D\n\ndelta\n")
    c.write("d.keywords.json", json.dumps({"filepath": "d.md", "keywords": ["k" * 1_000_000, "ok"]}))
    c.run("sync")
    c.run("relate", "x" * 100_000, "y", "-t", "synonym", "-c", "c", expect_exit=(1, 2))
    c.run("search", "x" * 100_000)
    c.run("query", "word " * 20_000)


def case_nan_numbers(c: Case):
    (c.root / "similarities.json").write_text(
        '{"similarities": [{"keyword1": "alpha", "keyword2": "beta", "type": "synonym", "context": "c", '
        '"score": NaN}, {"keyword1": "alpha", "keyword2": "lists", "type": "synonym", "context": "c", '
        '"score": Infinity}]}')
    c.run("sync")
    for value in ("nan", "inf", "-inf", "1e999"):
        c.run("relate", "alpha", "beta", "-t", "synonym", "-c", "c", "-s", value, expect_exit=(1, 2))
    c.run("query", "alpha", "--threshold", "nan", expect_exit=(1, 2))
    if scalar(c.db, "SELECT COUNT(*) FROM keyword_similarities WHERE score != score OR abs(score) > 1"):
        c.problems.append("a NaN or infinite score was stored")


def case_nan_import(c: Case):
    data = json.loads(kb_run("export", db=c.db).stdout)
    data["tables"]["documents"][0]["id"] = float("nan")
    path = c.root / "nan.json"
    path.write_text(json.dumps(data))
    c.run("import", path, "--force", expect_exit=(1,))


def case_huge_ids(c: Case):
    for value in ("9223372036854775808", "99999999999999999999", "-9223372036854775809"):
        c.run("feedback", value, "--helpful", "a.md", expect_exit=(1, 2))
        c.run("history", value, expect_exit=(1, 2))
    c.run("learned", "remove", "18446744073709551616", expect_exit=(1, 2))
    data = json.loads(kb_run("export", db=c.db).stdout)
    data["tables"]["documents"][0]["id"] = 2 ** 64
    path = c.root / "big.json"
    path.write_text(json.dumps(data))
    c.run("import", path, "--force", expect_exit=(1,))


def case_two_mb_document(c: Case):
    words = " ".join(f"word{i % 5000}" for i in range(250_000))
    c.write("big.md", "# Big\n\n" + words[: 2 * 1024 * 1024] + "\n\nneedlezebra\n")
    c.run("sync", expect_exit=(0,))
    out = c.run("query", "needlezebra", expect_exit=(0,))
    if out.code == 0 and not any(r["filepath"] == "big.md" for r in out.json()["results"]):
        c.problems.append("the 2 MB document is not found by its last word")


def case_outside_root_paths(c: Case):
    outside = c.root / "outside.md"
    outside.write_text("# Outside\n\nnot in the KB\n")
    c.run("add", outside, expect_exit=(1,))
    c.run("add", "/etc/hostname", expect_exit=(1,))
    c.run("add", c.kbdir / ".." / "outside.md", expect_exit=(1,))
    c.run("add", c.kbdir / "a.md", "--keywords", "/etc/passwd", expect_exit=(1,))


def case_outside_root_import(c: Case):
    docs_before = scalar(c.db, "SELECT COUNT(*) FROM documents")
    for bad in ("../outside.md", "/etc/passwd", "sub/../../x.md"):
        data = json.loads(kb_run("export", db=c.db).stdout)
        data["tables"]["documents"][0]["filepath"] = bad
        path = c.root / "outside.json"
        path.write_text(json.dumps(data))
        c.run("import", path, "--force", expect_exit=(1,))
    paths = [r[0] for r in sqlite3.connect(c.db).execute("SELECT filepath FROM documents")]
    if len(paths) != docs_before or any(p.startswith(("/", "..")) or "/../" in p for p in paths):
        c.problems.append(f"outside paths imported: {paths}")


def case_foreign_sqlite(c: Case):
    foreign = c.root / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
    conn.commit()
    conn.close()
    c.run("init", "--kb", c.kbdir, db=foreign, expect_exit=(1,))
    c.run("query", "alpha", db=foreign, expect_exit=(1,))
    conn = sqlite3.connect(foreign)
    tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    conn.close()
    if tables != ["customers"]:
        c.problems.append(f"init wrote into a foreign database: {tables}")
    garbage = c.root / "garbage.db"
    garbage.write_bytes(b"not a database at all\n" * 100)
    c.run("query", "alpha", db=garbage, expect_exit=(1,))


def case_fts_syntax(c: Case):
    for text in ('NEAR(alpha beta) AND "unbalanced', "* OR -", "alpha:beta ^x", "'); DROP TABLE documents; --"):
        c.run("query", text, expect_exit=(0,))
        c.run("search", text, expect_exit=(0,))
    c.run("query", "")
    if scalar(c.db, "SELECT COUNT(*) FROM documents") != 3:
        c.problems.append("documents changed by a query")


HOSTILE = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def run_one_case(name: str, root: Path) -> tuple[str, int, list[str]]:
    try:
        case = Case(name, root)
        HOSTILE[name](case)
    except Exception as exc:                      # a broken case set-up is a failure of the suite too
        return name, 0, [f"case raised {type(exc).__name__}: {exc}"]
    problem = integrity_problem(case.db)
    if problem:
        case.problems.append(problem)
    return name, case.commands, case.problems


def run_hostile(section: Section, work: Path, workers: int = 3) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda n: run_one_case(n, work / n), HOSTILE))
    for name, commands, problems in results:
        section.cases += 1
        section.rows.append((name, commands, "FAIL" if problems else "ok"))
        for problem in problems:
            section.fail(f"{name}: {problem}")

