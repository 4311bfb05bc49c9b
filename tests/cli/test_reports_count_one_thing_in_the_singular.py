"""The plain-text reports a person reads first say "1 unprocessed feedback entry from 1 query" and "from 1
directory", not "1 ... entries" / "1 directories"."""

from __future__ import annotations

from kb_indexer.cli.learn import learn_report

ONE = {"feedback_analyzed": 1, "queries": 1, "suggestions": [], "sections": {}, "summary": {"total": 1},
       "dry_run": False, "applied": 1, "marked_processed": 1, "mode": "auto", "held_for_review": 0}


def test_counted():
    from kb_indexer.cli.output import counted

    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(0, "entry", "entries") == "0 entries"
    assert counted(2, "error") == "2 errors"


def test_learn_report_of_one_entry():
    out = learn_report(ONE)
    assert out.startswith("Analyzing 1 unprocessed feedback entry from 1 query...\n")
    assert "- Total: 1 suggestion\n" in out and "Applied 1 suggestion." in out
    assert "Marked 1 feedback entry as processed." in out
    assert learn_report(ONE, reprocess=True).startswith("Analyzing 1 feedback entry from 1 query...")


def test_learn_report_of_one_item_held_for_review():
    out = learn_report({**ONE, "mode": "review", "applied": 0, "held_for_review": 1})
    assert "Held 1 item for review" in out and "Applied 0 suggestions." in out


def test_learn_report_of_several():
    out = learn_report({**ONE, "feedback_analyzed": 3, "queries": 2})
    assert out.startswith("Analyzing 3 unprocessed feedback entries from 2 queries...\n")


def test_skills_sync_of_one_directory(tmp_path, run):
    skill = tmp_path / "skills" / "tv"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tv\ndescription: Turn the TV on or off.\n---\n# TV\n",
                                    encoding="utf-8")
    assert run("init", "--kb", str(tmp_path), cwd=tmp_path).returncode == 0
    res = run("skills", "sync", str(tmp_path / "skills"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "0 errors) from 1 directory\n" in res.stdout
