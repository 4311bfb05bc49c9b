"""A note in a folder named by its file name alone (``virtual-environments.md`` for
``python-tooling/virtual-environments.md``) is not found, and the error names the document meant: in `show`,
`keywords`, `remove` and in `feedback`, whose marks a person types from the results they just read."""

from __future__ import annotations

import pytest

from kb_indexer.errors import NotFoundError, ValidationError

pytestmark = pytest.mark.both_engines

MEANT = "python-tooling/virtual-environments.md"


@pytest.mark.parametrize("name", ["virtual-environments.md", "virtual-environments"])
def test_show_names_the_document_in_its_folder(kb, name):
    with pytest.raises(NotFoundError, match=rf"did you mean {MEANT}\?"):
        kb.show(name)


def test_every_document_of_that_name_is_named(small):
    kb, root = small
    for folder in ("work", "home"):
        (root / folder).mkdir()
        (root / folder / "todo.md").write_text(f"# Todo at {folder}\n\nthings to do\n", encoding="utf-8")
    kb.sync()
    with pytest.raises(NotFoundError, match=r"did you mean home/todo\.md or work/todo\.md\?"):
        kb.show("todo.md")


@pytest.mark.parametrize("name", ["environments.md", "%.md", "_irtual-environments.md", "nope.md"])
def test_only_a_whole_file_name_is_a_guess(kb, name):
    with pytest.raises(NotFoundError) as missing:
        kb.show(name)
    assert "did you mean" not in str(missing.value) and "kbindex list-docs" in str(missing.value)


def test_a_path_with_a_folder_is_not_guessed_elsewhere(kb):
    with pytest.raises(NotFoundError) as missing:
        kb.show("other/virtual-environments.md")
    assert "did you mean" not in str(missing.value)


def test_feedback_names_the_document_meant(kb):
    qid = kb.query("virtual environments")["query_id"]
    with pytest.raises(ValidationError, match=rf"Not in the index: virtual-environments\.md \(did you mean "
                                              rf"{MEANT}\?\), no-such-note\.md"):
        kb.learning.feedback(qid, helpful=["virtual-environments.md"], not_helpful=["no-such-note.md"])
    assert kb.learning.feedback_show(qid)["count"] == 0


def test_the_command_line_gives_the_hint(kb, run):
    kb.query("virtual environments")
    res = run("feedback", "--last", "--helpful", "virtual-environments.md", "--db", kb.db_path, "-f", "json")
    assert res.returncode == 1 and f"did you mean {MEANT}?" in res.error()["message"]
    res = run("keywords", "virtual-environments.md", "--db", kb.db_path, "-f", "json")
    assert res.returncode == 1 and f"did you mean {MEANT}?" in res.error()["message"]
