"""The cheap stale-index check agrees with what sync would do."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kb_indexer.index import stale as stale_mod
from kb_indexer.index.stale import check, message

pytestmark = pytest.mark.both_engines


def bump(path):
    """Change a file so that its stat signature changes even on coarse-mtime filesystems."""
    st = path.stat()
    extra = "\n" if path.suffix == ".json" else "\nMore text.\n"
    path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


def test_fresh_index_is_not_stale(kb):
    info = kb.stale()
    assert info["stale"] is False and info["checked"] is True
    assert info["files"] == kb.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    assert message(info) is None


def test_changed_added_removed(kb):
    root = kb.kb_root
    bump(root / "reward-shaping.md")
    (root / "new-note.md").write_text("# New\n\ntext\n", encoding="utf-8")
    (root / "python-tooling" / "uv-package-manager.md").unlink()
    info = kb.stale()
    assert info["stale"] is True
    assert (info["changed"], info["added"], info["removed"]) == (1, 1, 1)
    assert set(info["examples"]) == {"reward-shaping.md", "new-note.md", "python-tooling/uv-package-manager.md"}
    msg = message(info)
    assert "1 changed" in msg and "1 added" in msg and "1 removed" in msg and "--sync" in msg
    kb.sync()
    assert kb.stale()["stale"] is False


def test_keywords_file_and_similarities_changes(kb):
    bump(kb.kb_root / "alphago-architecture.keywords.json")
    assert kb.stale()["changed"] == 1
    assert kb.sync()["errors"] == []
    sims = kb.kb_root.parent / "similarities.json"
    sims.write_text(sims.read_text(encoding="utf-8").replace('"score": 0.6', '"score": 0.65', 1), encoding="utf-8")
    info = kb.stale()
    assert info["stale"] is True and info["similarities_changed"]
    assert "similarities.json changed" in message(info)
    kb.sync()
    assert kb.stale()["stale"] is False


def test_ignores_what_sync_ignores(kb):
    root = kb.kb_root
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.md").write_text("# x\n", encoding="utf-8")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.md").write_text("# x\n", encoding="utf-8")
    (root / ".dotfile.md").write_text("# x\n", encoding="utf-8")
    (root / "notes.txt").write_text("not markdown", encoding="utf-8")
    assert kb.stale()["stale"] is False
    assert kb.sync()["added"] == 0


def test_missing_root_is_not_an_error(kb, tmp_path):
    info = check(kb.conn, tmp_path / "nowhere")
    assert info["stale"] is False and info["checked"] is False


def test_check_reads_no_document_or_keywords_file(kb, monkeypatch):
    """The check runs before every query: it compares stat signatures and never reads a document or keywords
    file (its speed is measured in bench/, not here)."""
    import builtins
    import pathlib

    reads = []
    real_open, real_read_bytes, real_read_text = builtins.open, pathlib.Path.read_bytes, pathlib.Path.read_text

    def spy(real):
        def wrapper(path, *a, **k):
            if str(path).endswith((".md", ".keywords.json", "similarities.json")):
                reads.append(str(path))
            return real(path, *a, **k)
        return wrapper

    monkeypatch.setattr(builtins, "open", spy(real_open))
    monkeypatch.setattr(pathlib.Path, "read_bytes", spy(real_read_bytes))
    monkeypatch.setattr(pathlib.Path, "read_text", spy(real_read_text))
    monkeypatch.setattr(os, "open", spy(os.open))
    assert kb.stale()["stale"] is False
    assert reads == []
    (kb.kb_root / "zz-new.md").write_text("# New\n", encoding="utf-8")
    assert kb.stale()["stale"] is True and reads == []


def test_an_edited_similarities_file_of_the_same_size_is_seen_by_its_new_time(kb):
    """The check takes an unchanged similarities file's digest from the last sync (no read per query); an
    edit that keeps the size still changes the modification time, and the file is read and compared."""
    sims = kb.kb_root.parent / "similarities.json"
    text = sims.read_text(encoding="utf-8")
    assert '"score": 0.6' in text
    st = sims.stat()
    sims.write_text(text.replace('"score": 0.6', '"score": 0.7', 1), encoding="utf-8")
    os.utime(sims, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert sims.stat().st_size == st.st_size
    assert kb.stale()["similarities_changed"] == [str(sims)]
    kb.sync()
    assert kb.stale()["stale"] is False
    sims.write_text(text, encoding="utf-8")  # back to what sync first imported: changed again
    os.utime(sims, ns=(st.st_atime_ns, st.st_mtime_ns + 20_000_000))
    assert kb.stale()["similarities_changed"] == [str(sims)]


# -- the quick check of large knowledge bases ------------------------------------------------------------


@pytest.fixture
def quick(kb, monkeypatch):
    """The bundled KB, checked as a large one would be (folders + recent files), its folders settled."""
    monkeypatch.setattr(stale_mod, "FULL_CHECK_MAX_FILES", 0)
    monkeypatch.setattr(stale_mod, "SETTLE_NS", 0)
    assert kb.stale()["mode"] == "quick"
    return kb


def test_quick_check_sees_added_deleted_and_new_folders(quick):
    root = quick.kb_root
    info = quick.stale()
    assert info["stale"] is False and info["folders_listed"] == 0
    (root / "python-tooling" / "new.md").write_text("# New\n\ntext\n", encoding="utf-8")
    (root / "fresh" / "deep").mkdir(parents=True)
    (root / "fresh" / "deep" / "x.md").write_text("# X\n\ntext\n", encoding="utf-8")
    (root / "reward-shaping.md").unlink()
    info = quick.stale()
    assert (info["added"], info["removed"], info["changed"]) == (2, 1, 0)
    assert set(info["examples"]) == {"python-tooling/new.md", "fresh/deep/x.md", "reward-shaping.md"}
    quick.sync()
    assert quick.stale()["stale"] is False


def test_quick_check_sees_a_deleted_folder(quick):
    import shutil

    n = len(list((quick.kb_root / "python-tooling").glob("*.md")))
    shutil.rmtree(quick.kb_root / "python-tooling")
    info = quick.stale()
    assert info["removed"] == n and info["stale"] is True


def test_quick_check_sees_in_place_edits_of_recent_files_only(quick, monkeypatch):
    monkeypatch.setattr(stale_mod, "RECENT_FILES", 1)
    recent = quick.conn.execute("SELECT filepath FROM documents ORDER BY updated_at DESC LIMIT 1").fetchone()[0]
    older = quick.conn.execute("SELECT filepath FROM documents WHERE filepath != ? LIMIT 1", (recent,)).fetchone()[0]
    bump(quick.kb_root / older)   # an in-place edit of a file not recently indexed: not seen by the quick check
    assert quick.stale()["stale"] is False
    full = quick.stale(full=True)
    assert full["changed"] == 1 and full["mode"] == "full"
    bump(quick.kb_root / recent)
    info = quick.stale()
    assert info["changed"] == 1 and info["examples"] == [recent]


def test_a_folder_changed_in_the_same_tick_as_the_sync_is_listed_again(kb, monkeypatch):
    """A folder written to close to the sync's walk may hide a change made in the same mtime tick: the check
    compares its entries (names and inode numbers, no stat per file) with those sync saw, and lists it in
    full only when they differ."""
    monkeypatch.setattr(stale_mod, "FULL_CHECK_MAX_FILES", 0)
    monkeypatch.setattr(stale_mod, "SETTLE_NS", 10**18)  # every folder counts as just written
    info = kb.stale()
    assert info["folders_listed"] == 0 and info["stale"] is False
    assert info["folders_compared"] == info["folders"]
    root = kb.kb_root
    st = os.stat(root)
    (root / "same-tick.md").write_text("# Same tick\n\ntext\n", encoding="utf-8")
    os.utime(root, ns=(st.st_atime_ns, st.st_mtime_ns))   # the folder's mtime unchanged: the same tick
    info = kb.stale()
    assert info["added"] == 1 and info["examples"] == ["same-tick.md"]
    assert info["folders_listed"] == 1


def test_quick_check_sees_a_recent_files_keywords_file_edited_added_or_removed(quick, monkeypatch):
    """The recent files' own check stats a keywords file only where sync saw one: one written since is a new
    name in its folder (the folder check lists it), one edited in place or deleted is seen by that stat."""
    monkeypatch.setattr(stale_mod, "RECENT_FILES", 1000)
    rows = quick.conn.execute("SELECT filepath, stat_sig FROM documents").fetchall()
    with_kw = next(p for p, sig in rows if "|" in sig)
    without = next(p for p, sig in rows if "|" not in sig)
    kw = (quick.kb_root / with_kw).with_name(Path(with_kw).stem + ".keywords.json")
    bump(kw)   # edited in place: its folder's mtime stays
    info = quick.stale()
    assert (info["changed"], info["examples"]) == (1, [with_kw]) and info["folders_listed"] == 0
    quick.sync()
    kw.unlink()
    info = quick.stale()
    assert with_kw in info["examples"] and info["stale"] is True
    quick.sync()
    folder = (quick.kb_root / without).parent
    (folder / (Path(without).stem + ".keywords.json")).write_text(
        json.dumps({"filepath": without, "title": "T", "summary": "S", "keywords": ["brand new tag"],
                    "categories": {"primary": ["brand new tag"]}}), encoding="utf-8")
    st = folder.stat()   # a later tick than the sync's, as a person's next edit is (same-tick: SETTLE_NS)
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    info = quick.stale()
    assert without in info["examples"] and info["folders_listed"] >= 1
