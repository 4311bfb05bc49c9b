"""A file named on the command line that does not exist is ``not_found`` (exit 1) in every command, as the error
table says (``chat --file`` said bad usage, exit 2; ``context compress --input`` said ``invalid_input``)."""

from __future__ import annotations

import pytest

CASES = [["import", "nope.json"], ["context", "compress", "--input", "nope.json"],
         ["chat", "--free", "--file", "nope.md"], ["import-similarities", "nope.json"],
         ["eval", "--queries", "nope.jsonl", "--qrels", "nope.tsv"]]


@pytest.mark.parametrize("args", CASES, ids=lambda a: a[0] if a[0] != "context" else "context-compress")
def test_a_missing_file_is_not_found(run, cli, kb, args):
    res = run(*args, "--db", kb.db_path, "--format", "json") if args[0] != "chat" else \
        run(*args, "--format", "json", env={"KBINDEX_CHAT_DB": str(kb.db_path.parent / "chat.db")})
    assert res.returncode == 1 and res.stdout == "", res.stderr
    assert res.error()["code"] == "not_found" and "nope" in res.error()["message"]
