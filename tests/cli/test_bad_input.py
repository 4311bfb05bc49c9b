"""Every kind of bad input: a clear message, exit 1 or 2, and nothing partly written."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.helpers import kw, write_doc


@pytest.fixture
def proj(tmp_path, run):
    root = tmp_path / "proj"
    kbdir = root / "knowledge-base"
    kbdir.mkdir(parents=True)
    write_doc(kbdir, "ok.md", "# OK\n\nfine\n", kw("s", "alpha"))
    res = run("init", "--format", "json", cwd=root)
    assert res.returncode == 0, res.stderr
    assert run("add", "knowledge-base/ok.md", "-f", "json", cwd=root).returncode == 0
    return root


def snapshot(root):
    """Every row of the kept tables (not only counts: an in-place change is a partial write too)."""
    conn = sqlite3.connect(root / "kbindex.db")
    out = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
           for t in ("documents", "keywords", "document_keywords", "keyword_similarities", "similarity_files",
                     "queries", "query_feedback", "learned_items", "meta")}
    out["documents_fts"] = sorted(conn.execute("SELECT rowid, * FROM documents_fts").fetchall(), key=repr)
    conn.close()
    return out


def check_error(res, code_in=(1,), text=None):
    assert res.returncode in code_in, (res.returncode, res.stdout, res.stderr)
    assert res.stdout == "", "errors must not touch stdout"
    err = res.error()
    assert err["message"]
    if text:
        assert text.lower() in err["message"].lower(), err["message"]
    return err


BAD_KEYWORDS = {
    "unparseable": ("{oops", "not valid JSON"),
    "missing_filepath": (json.dumps({"summary": "s", "keywords": ["a"]}), "filepath"),
    "missing_summary": (json.dumps({"filepath": "doc.md", "keywords": ["a"]}), "summary"),
    "missing_keywords": (json.dumps({"filepath": "doc.md", "summary": "s"}), "keywords"),
    "keywords_not_list": (json.dumps({"filepath": "doc.md", "summary": "s", "keywords": "a"}), "list of strings"),
    "keyword_not_string": (json.dumps({"filepath": "doc.md", "summary": "s", "keywords": ["a", 3]}), "list of strings"),
    "summary_wrong_type": (json.dumps({"filepath": "doc.md", "summary": 5, "keywords": ["a"]}), "summary"),
    "duplicate_keywords": (json.dumps({"filepath": "doc.md", "summary": "s", "keywords": ["RL", " rl "]}), "duplicate"),
    "top_level_array": ("[]", "object"),
}


@pytest.mark.parametrize("case", sorted(BAD_KEYWORDS))
def test_bad_keywords_json_is_refused_without_writes(proj, run, case):
    content, text = BAD_KEYWORDS[case]
    write_doc(proj / "knowledge-base", "doc.md", "# Doc\n\nbody\n")
    (proj / "knowledge-base" / "doc.keywords.json").write_text(content, encoding="utf-8")
    before = snapshot(proj)
    res = run("add", "knowledge-base/doc.md", "--format", "json", cwd=proj)
    check_error(res, text=text)
    assert snapshot(proj) == before


@pytest.mark.parametrize("args,text", [
    (["relate", "a", "b", "--type", "cousin", "--context", "c"], "unknown similarity type"),
    (["relate", "a", "b", "--type", "synonym", "--context", "c", "--score", "1.5"], "between 0 and 1"),
    (["relate", "a", "b", "--type", "synonym", "--context", "c", "--score", "-0.1"], "between 0 and 1"),
    (["relate", "a", "b", "--type", "synonym", "--context", "c", "--score", "nan"], "between 0 and 1"),
    (["relate", "RL", " rl", "--type", "synonym", "--context", "c"], "itself"),
    (["relate", "a", "b", "--type", "synonym", "--context", "  "], "context"),
])
def test_bad_relations_are_refused_without_writes(proj, run, args, text):
    before = snapshot(proj)
    usage = text in ("unknown similarity type", "between 0 and 1")  # an invalid option value: usage, exit 2
    check_error(run(*args, "--format", "json", cwd=proj), code_in=(2,) if usage else (1,), text=text)
    assert snapshot(proj) == before


def test_bad_similarities_file_imports_nothing(proj, run):
    path = proj / "sims.json"
    path.write_text(json.dumps({"similarities": [
        {"keyword1": "x", "keyword2": "y", "type": "synonym", "context": "fine", "score": 0.9},
        {"keyword1": "x", "keyword2": "z", "type": "synonym", "context": "bad score", "score": 7},
    ]}), encoding="utf-8")
    before = snapshot(proj)
    check_error(run("import-similarities", str(path), "-f", "json", cwd=proj), text="similarities[1]")
    assert snapshot(proj) == before


def test_file_outside_kb_root_is_refused(proj, run, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n")
    before = snapshot(proj)
    check_error(run("add", str(outside), "-f", "json", cwd=proj), text="outside the knowledge-base root")
    check_error(run("add", "../outside.md", "-f", "json", cwd=proj), text="outside the knowledge-base root")
    assert snapshot(proj) == before


def test_binary_non_utf8_and_missing_files(proj, run):
    kbdir = proj / "knowledge-base"
    (kbdir / "bin.md").write_bytes(b"\x89PNG\x00\x00")
    (kbdir / "latin.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
    before = snapshot(proj)
    check_error(run("add", "knowledge-base/bin.md", "-f", "json", cwd=proj), text="binary")
    check_error(run("add", "knowledge-base/latin.md", "-f", "json", cwd=proj), text="UTF-8")
    err = check_error(run("add", "knowledge-base/nope.md", "-f", "json", cwd=proj), text="not found")
    assert err["code"] == "not_found"
    check_error(run("show", "nope.md", "-f", "json", cwd=proj), text="not in the index")
    assert snapshot(proj) == before


def test_missing_database_says_to_run_init(tmp_path, run):
    res = run("search", "x", "--format", "json", cwd=tmp_path)
    err = check_error(res, text="kbindex init")
    assert err["code"] == "not_initialised"
    assert not (tmp_path / "kbindex.db").exists(), "a read command must not create an index"
    res = run("list-docs", "--db", str(tmp_path / "nowhere.db"), cwd=tmp_path)
    assert res.returncode == 1 and "kbindex init" in res.stderr


def test_database_from_newer_schema_is_refused(proj, run):
    conn = sqlite3.connect(proj / "kbindex.db")
    conn.execute("INSERT INTO _migrations (name) VALUES ('m999_future')")
    conn.commit()
    conn.close()
    check_error(run("list-docs", "-f", "json", cwd=proj), text="newer kbindex")


@pytest.mark.parametrize("payload,text", [
    ("not json at all", "not valid JSON"),
    (json.dumps({"tables": {}}), "Not a kbindex export"),
    (json.dumps({"format": "kbindex-export", "format_version": 99, "tables": {}}), "format_version"),
    (json.dumps({"format": "kbindex-export", "format_version": 1, "tables": {"bogus": []}}), "does not know"),
    (json.dumps({"format": "kbindex-export", "format_version": 1,
                 "tables": {"documents": [{"id": 1, "filepath": "a.md", "nonsense": 1}]}}), "unknown columns"),
    (json.dumps({"format": "kbindex-export", "format_version": 1,
                 "tables": {"document_keywords": [{"id": 1, "document_id": 5, "keyword_id": 9}]}}), "missing rows"),
])
def test_malformed_export_is_refused_and_index_unchanged(proj, run, payload, text):
    path = proj / "bad-export.json"
    path.write_text(payload, encoding="utf-8")
    before = snapshot(proj)
    check_error(run("import", str(path), "--force", "-f", "json", cwd=proj), text=text)
    assert snapshot(proj) == before


def test_usage_errors_exit_2_with_json(proj, run):
    res = run("search", "--format", "json", cwd=proj)
    assert res.returncode == 2 and res.stdout == ""
    assert res.error()["code"] == "usage"
    res = run("search", "a", "--or", "--and", "--format", "json", cwd=proj)
    assert res.returncode == 2 and res.error()["code"] == "usage"
    res = run("similar", "alpha", "--type", "nope", "--format", "json", cwd=proj)
    assert res.returncode == 2
    res = run("search", "a", "--no-such-flag", cwd=proj)
    assert res.returncode == 2 and "No such option" in res.stderr
