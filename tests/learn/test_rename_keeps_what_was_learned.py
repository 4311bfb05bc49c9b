"""A file renamed (or moved) between two syncs keeps its document: its id, learned items, feedback, recorded
query results and vectors follow it (issue 27, item 6). Pairing rules: kb_indexer.index.renames."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from helpers import die_at_read, kw, write_doc
from kb_indexer.index import reader as reader_mod
from kb_indexer.index import sync as sync_mod
from kb_indexer.api import QueryOptions

TARGET = "markov-decision-processes.md"  # a bundled document without a keywords file
QUESTIONS = ["what is the bellman equation for values", "how to formalise sequential decisions under uncertainty",
             "discounted return of a policy"]


def _doc_id(conn, path):
    row = conn.execute("SELECT id FROM documents WHERE filepath = ?", (path,)).fetchone()
    return row[0] if row else None


def _teach(kb, target=TARGET):
    """Feedback on three questions (with a keyword) marking ``target`` helpful, then learn."""
    for question in QUESTIONS:
        res = kb.query(question, ["bellman optimality"])
        others = [r["filepath"] for r in res["results"] if r["filepath"] != target][:1]
        kb.learning.feedback(res["query_id"], [target], others)
    assert kb.learning.learn()["applied"]
    return kb.learning.learned_list(include_removed=True)["learned"]


def _by_id(items):
    return {i["id"]: (i["kind"], i["status"], i["key"], i["weight"]) for i in items}


def test_a_renamed_document_keeps_learned_items_feedback_history_and_boosts(kb):
    learned = _teach(kb)
    assert {i["kind"] for i in learned} >= {"association", "keyword"}
    kb.learning.learned_remove([learned[0]["id"]])  # a removed item is kept as removed: `learned list --all` shows it
    listed = kb.learning.learned_list(include_removed=True)["learned"]
    before = _by_id(listed)
    paths = {i["id"]: i["detail"].get("filepath") for i in listed}
    assert TARGET in paths.values()
    doc_id = _doc_id(kb.conn, TARGET)
    boosted_before = next("learned" in r["sources"] for r in kb.query(QUESTIONS[2], ["bellman optimality"])["results"]
                          if r["filepath"] == TARGET)
    os.rename(kb.kb_root / TARGET, kb.kb_root / "mdp.md")

    res = kb.sync()
    after = kb.learning.learned_list(include_removed=True)["learned"]
    assert _by_id(after) == before
    assert _doc_id(kb.conn, "mdp.md") == doc_id
    assert (res["renamed"], res["added"], res["removed"]) == (1, 0, 0)
    assert res["renames"] == [{"from": TARGET, "to": "mdp.md"}]
    assert {i["id"]: i["detail"].get("filepath") for i in after} == {
        k: "mdp.md" if v == TARGET else v for k, v in paths.items()}
    for qid in (1, 2, 3):
        assert [f["filepath"] for f in kb.learning.feedback_show(qid)["feedback"] if f["helpful"]] == ["mdp.md"]
        tops = [r["filepath"] for a in kb.learning.history(qid)["attempts"] for r in a["top_results"]]
        assert "mdp.md" in tops and TARGET not in tops
    assert kb.learning.learn(dry_run=True)["suggestions"] == []  # nothing to learn again: it all followed
    hit = next(r for r in kb.query(QUESTIONS[2], ["bellman optimality"])["results"] if r["filepath"] == "mdp.md")
    assert "learned" in hit["sources"] and boosted_before
    assert "bellman optimality" in [k["keyword"] for k in kb.keywords("mdp.md")["keywords"]]


def test_a_renamed_document_keeps_its_vectors(small):
    from kb_indexer.llm.config import EmbedOptions

    handle, kbdir = small
    write_doc(kbdir, "engines.md", "# Automobile engines\n\nPistons and crankshafts in the automobile.\n")
    write_doc(kbdir, "gardens.md", "# Gardens\n\nRoses and tulips need water.\n")
    handle.sync()
    assert handle.embeddings.embed(embed=EmbedOptions(backend="fake-embed"))["embedded"] == 2
    os.rename(kbdir / "engines.md", kbdir / "cars.md")
    res = handle.sync()
    assert handle.embeddings.embed()["embedded"] == 0  # nothing to embed again: its vectors stayed with it
    assert res["renamed"] == 1
    assert handle.query("car", options=QueryOptions(method="semantic"))["results"][0]["filepath"] == "cars.md"


def test_a_rename_onto_the_path_of_a_removed_document_carries_its_own_feedback(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# Alpha\n\nfirst note about kites\n")
    write_doc(kbdir, "x.md", "# Other\n\nsecond note about kites\n")
    handle.sync()
    qid = handle.query("kites")["query_id"]
    handle.learning.feedback(qid, ["a.md"], ["x.md"])
    os.remove(kbdir / "x.md")
    handle.sync()  # x.md's feedback row stays (history), on a path no document has now
    os.rename(kbdir / "a.md", kbdir / "x.md")
    res = handle.sync()
    assert res["renames"] == [{"from": "a.md", "to": "x.md"}]
    assert [(f["filepath"], f["helpful"]) for f in handle.learning.feedback_show(qid)["feedback"]] == [("x.md", True)]


def test_a_document_moved_into_a_subfolder_with_its_keywords_file_keeps_both(small):
    handle, kbdir = small
    write_doc(kbdir, "notes.md", "# Notes\n\nabout gradient clipping\n", kw("s", "clipping", "gradients", filepath="notes.md"))
    handle.sync()
    doc_id = _doc_id(handle.conn, "notes.md")
    (kbdir / "deep").mkdir()
    os.rename(kbdir / "notes.md", kbdir / "deep" / "notes.md")
    os.rename(kbdir / "notes.keywords.json", kbdir / "deep" / "notes.keywords.json")  # names it "notes.md"
    res = handle.sync()
    assert res["renames"] == [{"from": "notes.md", "to": "deep/notes.md"}] and res["errors"] == []
    row = handle.conn.execute("SELECT id, keywords_file FROM documents WHERE filepath = 'deep/notes.md'").fetchone()
    assert tuple(row) == (doc_id, "deep/notes.keywords.json")
    assert {k["keyword"] for k in handle.keywords("deep/notes.md")["keywords"]} == {"clipping", "gradients"}


def test_a_renamed_keywords_file_goes_with_its_renamed_document(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\nsome text about tokenizers\n", kw("s", "tokenizers", title="Tokenizers"))
    handle.sync()
    doc_id = _doc_id(handle.conn, "a.md")
    os.rename(kbdir / "a.md", kbdir / "b.md")
    os.remove(kbdir / "a.keywords.json")  # renamed, and its "filepath" says the new name
    write_doc(kbdir, "b.md", "# A\n\nsome text about tokenizers\n", kw("s", "tokenizers", "bpe", title="Tokenizers"))
    res = handle.sync()
    assert (res["renamed"], res["added"], res["removed"], res["errors"]) == (1, 0, 0, [])
    assert _doc_id(handle.conn, "b.md") == doc_id
    assert {k["keyword"] for k in handle.keywords("b.md")["keywords"]} == {"tokenizers", "bpe"}


def test_git_mv_of_a_document_and_its_keywords_file_naming_the_old_path_keeps_its_identity(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\nsome text about tokenizers\n", kw("s", "tokenizers"))  # "filepath": "a.md"
    write_doc(kbdir, "other.md", "# Other\n\nunrelated\n")
    handle.sync()
    doc_id = _doc_id(handle.conn, "a.md")
    os.rename(kbdir / "a.md", kbdir / "b.md")
    os.rename(kbdir / "a.keywords.json", kbdir / "b.keywords.json")
    res = handle.sync()
    # The keywords file still describes 'a.md': it is reported, and b.md is indexed without it, as itself.
    assert [e["file"] for e in res["errors"]] == ["b.keywords.json"]
    assert res["renames"] == [{"from": "a.md", "to": "b.md"}] and res["removed"] == 0
    assert _doc_id(handle.conn, "b.md") == doc_id
    write_doc(kbdir, "b.md", "# A\n\nsome text about tokenizers\n", kw("s", "tokenizers"))  # fixed
    res = handle.sync()
    assert res["errors"] == [] and res["updated"] == 1
    assert _doc_id(handle.conn, "b.md") == doc_id
    assert "tokenizers" in [k["keyword"] for k in handle.keywords("b.md")["keywords"]]
    os.remove(kbdir / "other.md")  # a vanished file with no new file of its text is removed as before
    assert handle.sync()["removed"] == 1


def test_a_keywords_file_left_behind_is_an_orphan_and_the_document_keeps_its_identity(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\ntext\n", kw("s", "alpha"))
    handle.sync()
    doc_id = _doc_id(handle.conn, "a.md")
    os.rename(kbdir / "a.md", kbdir / "b.md")
    res = handle.sync()
    assert res["renames"] == [{"from": "a.md", "to": "b.md"}]
    assert _doc_id(handle.conn, "b.md") == doc_id
    assert handle.keywords("b.md")["keywords"] == []  # the file keywords stayed with the keywords file
    assert res["errors"] == [] and [w["file"] for w in res["warnings"]] == ["a.keywords.json"]
    assert "renamed to b.md; rename this file to b.keywords.json" in res["warnings"][0]["message"]


def test_two_identical_files_renamed_each_keep_their_own_identity(small):
    handle, kbdir = small
    for name in ("a.md", "b.md", "c.md"):
        write_doc(kbdir, name, "# Template\n\nto be written\n")
    handle.sync()
    ids = {n: _doc_id(handle.conn, n) for n in ("a.md", "b.md", "c.md")}
    (kbdir / "x").mkdir()
    for name in ("b.md", "a.md"):
        os.rename(kbdir / name, kbdir / "x" / name)
    os.rename(kbdir / "c.md", kbdir / "z.md")
    res = handle.sync()
    # Same text: the vanished document with the same file name first, then path order.
    assert sorted((r["from"], r["to"]) for r in res["renames"]) == [
        ("a.md", "x/a.md"), ("b.md", "x/b.md"), ("c.md", "z.md")]
    assert {n: _doc_id(handle.conn, n) for n in ("x/a.md", "x/b.md", "z.md")} == {
        "x/a.md": ids["a.md"], "x/b.md": ids["b.md"], "z.md": ids["c.md"]}


def test_more_vanished_copies_than_new_files_renames_one_and_removes_the_rest(small):
    handle, kbdir = small
    for name in ("a.md", "b.md"):
        write_doc(kbdir, name, "# Same\n\nsame\n")
    handle.sync()
    os.remove(kbdir / "a.md")
    os.rename(kbdir / "b.md", kbdir / "c.md")
    res = handle.sync()
    assert (res["renamed"], res["removed"], res["added"]) == (1, 1, 0)
    assert res["renames"] == [{"from": "a.md", "to": "c.md"}]  # no same name: the first in path order


def test_a_rename_with_an_edit_of_a_document_nothing_hangs_off_is_a_removal_and_an_addition(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\nfirst text\n")
    handle.sync()
    old_id = _doc_id(handle.conn, "a.md")
    os.remove(kbdir / "a.md")
    write_doc(kbdir, "b.md", "# A\n\nfirst text, edited\n")
    res = handle.sync()
    assert (res["renamed"], res["removed"], res["added"], res["renames"]) == (0, 1, 1, [])
    assert _doc_id(handle.conn, "b.md") != old_id


def test_a_sync_killed_between_batches_keeps_the_identity_of_every_renamed_document(small, monkeypatch):
    handle, kbdir = small
    monkeypatch.setattr(sync_mod, "BATCH_DOCS", 10)
    for i in range(35):
        write_doc(kbdir, f"d{i:03d}.md", f"# Doc {i}\n\nbody {i}\n")
    handle.sync()
    ids = {f"d{i:03d}.md": _doc_id(handle.conn, f"d{i:03d}.md") for i in range(35)}
    (kbdir / "moved").mkdir()
    for name in ids:
        os.rename(kbdir / name, kbdir / "moved" / name)
    real = die_at_read(monkeypatch, 25)
    with pytest.raises(KeyboardInterrupt):
        handle.sync()
    assert handle.conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 35  # none lost
    monkeypatch.setattr(reader_mod, "load_document", real)
    res = handle.sync()
    assert (res["renamed"], res["added"], res["removed"]) == (15, 0, 0)
    assert {n: _doc_id(handle.conn, "moved/" + n) for n in ids} == ids


@pytest.mark.sqlite_only("an SQLite index from before migration m110 (PostgreSQL has its own migrations)")
def test_an_index_from_before_text_hashes_still_pairs_documents_without_keywords_files(small):
    from kb_indexer.store.opening import open_db

    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\ntext\n")
    handle.sync()
    doc_id = _doc_id(handle.conn, "a.md")
    handle.conn.execute("ALTER TABLE documents DROP COLUMN text_hash")  # as an index written before m110
    handle.conn.execute("DELETE FROM _migrations WHERE name = 'm110_document_text_hash'")
    handle.conn.commit()
    handle.conn.close()
    handle.conn = open_db(handle.db_path)  # upgrades it
    os.rename(kbdir / "a.md", kbdir / "b.md")
    assert handle.sync()["renamed"] == 1
    assert _doc_id(handle.conn, "b.md") == doc_id


@pytest.fixture
def proj(project, run):
    assert run("init", cwd=project).returncode == 0
    assert run("sync", cwd=project).returncode == 0
    return project


def test_git_mv_then_sync_through_the_command_keeps_every_learned_item(proj, run):
    for question in QUESTIONS:
        res = run("query", question, "--keywords", "bellman optimality", "-f", "json", cwd=proj).json()
        assert run("feedback", res["query_id"], "--helpful", TARGET, cwd=proj).returncode == 0
    assert run("learn", cwd=proj).returncode == 0
    before = run("learned", "list", "--all", "-f", "json", cwd=proj).json()
    assert before["count"] >= 4
    kbdir = proj / "knowledge-base"
    if shutil.which("git"):
        git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
        subprocess.run(git + ["init", "-q"], cwd=kbdir, check=True)
        subprocess.run(git + ["add", "-A"], cwd=kbdir, check=True)
        subprocess.run(git + ["commit", "-qm", "notes"], cwd=kbdir, check=True)
        subprocess.run(git + ["mv", TARGET, "mdp.md"], cwd=kbdir, check=True)
    else:
        os.rename(kbdir / TARGET, kbdir / "mdp.md")
    out = run("sync", "-f", "json", cwd=proj)
    assert out.returncode == 0, out.stderr
    after = run("learned", "list", "--all", "-f", "json", cwd=proj).json()
    assert _by_id(after["learned"]) == _by_id(before["learned"])
    assert out.json()["renames"] == [{"from": TARGET, "to": "mdp.md"}]
    shown = run("feedback", "1", "--show", "-f", "json", cwd=proj).json()
    assert [f["filepath"] for f in shown["feedback"]] == ["mdp.md"]
    os.rename(kbdir / "mdp.md", kbdir / "mdp2.md")
    text = run("sync", cwd=proj)
    assert text.returncode == 0 and "mdp.md -> mdp2.md" in text.stdout
    assert json.loads(run("learned", "list", "--all", "-f", "json", cwd=proj).stdout)["count"] == before["count"]


def test_a_rename_with_a_rewrite_says_what_learning_it_drops(kb, run):
    learned = [i for i in _teach(kb) if i["status"] == "active"]
    on_target = sum(1 for i in learned if i["detail"].get("filepath") == TARGET)
    assert on_target
    text = (kb.kb_root / TARGET).read_text(encoding="utf-8")
    half = text[: len(text) // 3]   # most of the text replaced: another document
    (kb.kb_root / "mdp.md").write_text(half + "\nA new note about scheduling trains and crews.\n", encoding="utf-8")
    (kb.kb_root / TARGET).unlink()
    res = kb.sync()
    assert (res["renamed"], res["added"], res["removed"]) == (0, 1, 1)
    [warning] = [w for w in res["warnings"] if w["file"] == TARGET]
    assert warning["message"].startswith(f"{TARGET} removed with {on_target} learned item")
    assert "3 feedback marks" in warning["message"] and "see `renames`" in warning["message"]


def test_a_rename_with_an_edit_keeps_what_was_learned_and_the_feedback(kb, run):
    """An editor's rename-and-save, or a `git pull` with a rename and an edit: the document keeps its id, its
    learned items and its feedback when most of its text is unchanged (``similarity`` in ``renames``)."""
    before = _by_id([i for i in _teach(kb) if i["status"] == "active"])
    doc_id = _doc_id(kb.conn, TARGET)
    text = (kb.kb_root / TARGET).read_text(encoding="utf-8")
    (kb.kb_root / "ops").mkdir()
    (kb.kb_root / "ops" / "mdp-notes.md").write_text(text.replace("Markov", "Markov (MDP)", 1)
                                                     + "\nOne more line about zebracorn policies.\n", encoding="utf-8")
    (kb.kb_root / TARGET).unlink()
    res = kb.sync()
    assert (res["renamed"], res["added"], res["removed"]) == (1, 0, 0)
    [moved] = res["renames"]
    assert moved["from"] == TARGET and moved["to"] == "ops/mdp-notes.md" and 0.5 <= moved["similarity"] < 1
    assert _doc_id(kb.conn, "ops/mdp-notes.md") == doc_id
    assert _by_id(kb.learning.learned_list()["learned"]) == before
    paths = {r[0] for r in kb.conn.execute("SELECT filepath FROM query_feedback")}
    assert "ops/mdp-notes.md" in paths and TARGET not in paths
    assert [r["filepath"] for r in kb.query("zebracorn")["results"]][:1] == ["ops/mdp-notes.md"]
    assert not [w for w in res["warnings"] if "learned item" in w["message"]]


BODY = " ".join(f"word{i}" for i in range(60))


@pytest.fixture
def a_removed(small):
    """a.md indexed, marked helpful once, then deleted (before the next sync)."""
    handle, kbdir = small
    write_doc(kbdir, "a.md", f"# A\n\n{BODY}\n")
    handle.sync()
    _with_feedback(handle, "word1 word2", "a.md")
    os.remove(kbdir / "a.md")
    return handle, kbdir, BODY


def test_the_most_alike_new_file_takes_an_edited_document(a_removed):
    """Two new files like a vanished document with feedback: the more alike takes it; the other is added."""
    handle, kbdir, body = a_removed
    write_doc(kbdir, "b.md", f"# A\n\n{body} and a few more words\n")
    write_doc(kbdir, "c.md", f"# A\n\n{body[: len(body) // 2]} then something else entirely here\n")
    out = handle.sync()
    assert [(r["from"], r["to"]) for r in out["renames"]] == [("a.md", "b.md")]
    assert (out["renamed"], out["added"], out["removed"]) == (1, 1, 0)


def test_an_unchanged_copy_goes_by_the_text_rule_not_the_edited_one(a_removed):
    """A vanished document whose exact text is in a new file is the text rule's, whatever else is alike."""
    handle, kbdir, body = a_removed
    write_doc(kbdir, "b.md", f"# A\n\n{body} and more\n")
    write_doc(kbdir, "z.md", f"# A\n\n{body}\n")
    out = handle.sync()
    assert out["renames"] == [{"from": "a.md", "to": "z.md"}]


def test_a_plain_rename_and_a_removal_without_learning_say_nothing(kb):
    taught = {i["detail"].get("filepath") for i in _teach(kb)}
    untaught = next(p for p in ("supervised-learning-basics.md", "unsupervised-learning.md", "reward-shaping.md")
                    if p not in taught)
    os.rename(kb.kb_root / TARGET, kb.kb_root / "mdp.md")
    (kb.kb_root / untaught).unlink()
    res = kb.sync()
    assert res["renamed"] == 1 and res["removed"] >= 1
    assert not [w for w in res["warnings"] if "learned item" in w["message"]]


def _with_feedback(handle, question, path):
    res = handle.query(question)
    handle.learning.feedback(res["query_id"], [path], [])


def test_a_file_a_moved_document_went_to_is_not_offered_to_an_edited_one(small):
    """`mv a.md p.md` and a new a.md, in the sync where d.md (with feedback) became e.md with an edit: p.md got a's
    document from the text rule; d.md was paired with p.md (its text is d's but for a few words), never moved,
    and removed. It goes to e.md now."""
    handle, kbdir = small
    base = " ".join(f"w{i}" for i in range(60))
    write_doc(kbdir, "a.md", f"# A\n\n{base}\n")
    write_doc(kbdir, "d.md", f"# D\n\n{base} extra words here\n")
    handle.sync()
    _with_feedback(handle, "w1 w2", "d.md")
    os.rename(kbdir / "a.md", kbdir / "p.md")
    write_doc(kbdir, "a.md", "# A2\n\ncompletely new content now\n")
    os.remove(kbdir / "d.md")
    write_doc(kbdir, "e.md", f"# D\n\n{' '.join(f'w{i}' for i in range(58))} extra words\n")
    res = handle.sync()
    assert sorted((r["from"], r["to"]) for r in res["renames"]) == [("a.md", "p.md"), ("d.md", "e.md")]
    assert [r[0] for r in handle.conn.execute("SELECT filepath FROM query_feedback")] == ["e.md"]


def test_front_matter_is_left_out_of_the_comparison(small):
    """The stored body has no front matter, the new file had it: a renamed note with a long YAML header and one
    sentence added scored 0.40 and was removed."""
    handle, kbdir = small
    fm = ("---\ntitle: Deployment runbook\ntags: [ops, deploy, kubernetes, helm, rollout, canary, rollback]\n"
          "aliases: [release process, shipping, deploy steps]\nowner: platform team\nreviewed: 2024-01-01\n---\n")
    body = ("# Deployment runbook\n\nRun the helm upgrade with the canary values first, then watch the error rate "
            "for ten minutes before promoting.\n")
    write_doc(kbdir, "deploy.md", fm + body)
    handle.sync()
    _with_feedback(handle, "helm canary", "deploy.md")
    os.remove(kbdir / "deploy.md")
    write_doc(kbdir, "ops/deploy.md", fm + body + "Roll back with helm rollback.\n")
    [moved] = handle.sync()["renames"]
    assert moved["from"] == "deploy.md" and moved["to"] == "ops/deploy.md" and moved["similarity"] > 0.7


def test_a_new_note_from_the_same_template_is_not_taken_for_a_removed_one(small):
    """Meeting notes share their template: a new one is another document, and the removed one's feedback is
    named in the warning."""
    handle, kbdir = small
    tmpl = ("## Attendees\n\n## Agenda\n\n1. Status of the project\n2. Risks and blockers\n3. Next steps and owners\n"
            "\n## Decisions\n\n## Action items\n\n- [ ] follow up\n")
    write_doc(kbdir, "meet-0301.md", "# Meeting 2024-03-01\n\n" + tmpl + "\nBudget approved for zebracorn.\n")
    handle.sync()
    _with_feedback(handle, "zebracorn budget", "meet-0301.md")
    os.remove(kbdir / "meet-0301.md")
    write_doc(kbdir, "meet-0308.md", "# Meeting 2024-03-08\n\n" + tmpl + "\nHiring freeze discussed.\n")
    res = handle.sync()
    assert (res["renames"], res["added"], res["removed"]) == ([], 1, 1)
    [warning] = [w for w in res["warnings"] if w["file"] == "meet-0301.md"]
    assert "1 feedback mark" in warning["message"]


def test_a_copy_of_a_note_being_edited_does_not_take_its_document(small):
    """`cp a.md copy.md`, then an edit of a.md: a.md keeps its document, feedback and learned items; the copy is
    a new document (a planted copy of a note's old text cannot take what was learned about it)."""
    handle, kbdir = small
    text = "# Rewards\n\n" + " ".join(f"reward shaping term{i}" for i in range(40)) + "\n"
    write_doc(kbdir, "a.md", text)
    write_doc(kbdir, "other.md", "# Other\n\nunrelated words\n")
    handle.sync()
    _with_feedback(handle, "reward shaping", "a.md")
    doc_id = _doc_id(handle.conn, "a.md")
    shutil.copyfile(kbdir / "a.md", kbdir / "zz-copy.md")
    with open(kbdir / "a.md", "a", encoding="utf-8") as fh:
        fh.write("\nExtra paragraph.\n")
    res = handle.sync()
    assert res["renames"] == [] and (res["added"], res["updated"], res["removed"]) == (1, 1, 0)
    assert _doc_id(handle.conn, "a.md") == doc_id
    assert [r[0] for r in handle.conn.execute("SELECT filepath FROM query_feedback")] == ["a.md"]


def test_a_note_rewritten_after_its_text_was_copied_away_lets_the_document_follow_its_text(small):
    """The same files on disk, but a.md now holds another note: the document goes with its text to the copy."""
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# Rewards\n\n" + " ".join(f"reward shaping term{i}" for i in range(40)) + "\n")
    handle.sync()
    doc_id = _doc_id(handle.conn, "a.md")
    shutil.copyfile(kbdir / "a.md", kbdir / "z.md")
    write_doc(kbdir, "a.md", "# Rockets\n\nsomething else entirely about rockets and fuel\n")
    res = handle.sync()
    assert res["renames"] == [{"from": "a.md", "to": "z.md"}] and _doc_id(handle.conn, "z.md") == doc_id


def test_a_long_note_is_compared_by_its_beginning(small, monkeypatch):
    """Only the first SHINGLE_WORDS words are compared (a 4 MB note's sequences took 400 MB): a long note renamed
    with an edit past them pairs with similarity 1."""
    from kb_indexer.index import renames

    monkeypatch.setattr(renames, "SHINGLE_WORDS", 50)
    handle, kbdir = small
    write_doc(kbdir, "long.md", "# Long\n\n" + " ".join(f"w{i}" for i in range(300)) + "\n")
    handle.sync()
    _with_feedback(handle, "w1 w2", "long.md")
    os.remove(kbdir / "long.md")
    write_doc(kbdir, "longer.md", "# Long\n\n" + " ".join(f"w{i}" for i in range(300)) + " and an edit\n")
    assert handle.sync()["renames"] == [{"from": "long.md", "to": "longer.md", "similarity": 1.0}]
