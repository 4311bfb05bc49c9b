"""Build the upgrade fixtures: a tiny index written by the real kbindex of each released schema version.

Run from the repository root:  python tests/data/upgrade/make_fixtures.py
For each commit in RELEASES it checks the commit out in a temporary git worktree, runs that commit's
kbindex (PYTHONPATH) to init, sync, relate, query, give feedback and learn (what that version has), and keeps
the index as tests/data/upgrade/<last migration>-<commit>.db. tests/store/test_schema_upgrade.py opens each with the current
code. The script is kept so a fixture can be rebuilt; the .db files are committed.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent

# commit on main -> the last migration it applies (every commit that changed the migration list)
RELEASES = {
    "1e7dfc5": "m003_history",
    "e341b0d": "m030_learning",
    "b6589e3": "m040_similarity_files",   # m040 without similarity_file_entries
    "911d266": "m040_similarity_files",   # m040 as on main today (the table was added to its body)
}

DOCS = {
    "rl/policy-gradients.md": ("# Policy gradients\n\nREINFORCE and actor-critic methods for reinforcement "
                               "learning.\n", ["reinforcement learning", "policy gradient", "RL"]),
    "nlp/transformers.md": ("# Transformers\n\nAttention is all you need; large language models.\n",
                            ["transformer", "LLM", "attention"]),
    "notes.md": ("# Notes\n\nMisc notes about arrays.\n", None),
}
SIMILARITIES = {"similarities": [
    {"keyword1": "RL", "keyword2": "reinforcement learning", "type": "abbreviation", "context": "ML",
     "score": 1.0},
    {"keyword1": "LLM", "keyword2": "transformer", "type": "related_concept", "context": "NLP", "score": 0.7},
]}


def _kb(root: Path) -> Path:
    kbdir = root / "knowledge-base"
    for rel, (text, keywords) in DOCS.items():
        path = kbdir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if keywords:
            path.with_name(path.stem + ".keywords.json").write_text(json.dumps(
                {"filepath": rel, "summary": text.splitlines()[0][2:], "keywords": keywords}), encoding="utf-8")
    (root / "similarities.json").write_text(json.dumps(SIMILARITIES), encoding="utf-8")
    return kbdir


def _run(src: Path, root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("KBINDEX_LLM_BACKEND", None)
    proc = subprocess.run([sys.executable, "-m", "kb_indexer", *args, "--db", str(root / "kbindex.db")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise SystemExit(f"{args}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def _has(src: Path, command: str) -> bool:
    env = dict(os.environ, PYTHONPATH=str(src))
    proc = subprocess.run([sys.executable, "-m", "kb_indexer", command, "--help"], env=env, cwd=src,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode == 0


def build(rev: str, last: str, work: Path) -> Path:
    src = work / f"src-{rev}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-f", "--detach", str(src), rev], check=True,
                   capture_output=True)
    try:
        root = work / f"kb-{rev}"
        kbdir = _kb(root)
        _run(src, root, "init", "--kb", str(kbdir))
        _run(src, root, "sync", "--kb", str(kbdir))
        _run(src, root, "import-similarities", str(root / "similarities.json"), check=False)
        _run(src, root, "relate", "arrays", "list", "-t", "related_concept", "-c", "programming", "-s", "0.6")
        if _has(src, "query"):
            out = json.loads(_run(src, root, "query", "reinforcement learning", "-f", "json").stdout)
            qid = out["query_id"]
            _run(src, root, "feedback", str(qid), "--helpful", "rl/policy-gradients.md",
                 "--not-helpful", "notes.md", "--notes", "fixture")
            _run(src, root, "query", "transformer attention", "-f", "json")
        if _has(src, "learn"):
            _run(src, root, "learn")
        db = root / "kbindex.db"
        conn = sqlite3.connect(db)
        applied = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert applied[-1] == last, (rev, applied)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
        conn.close()
        target = HERE / f"{last}-{rev}.db"
        shutil.copy(db, target)
        return target
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(src)], capture_output=True)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for rev, last in RELEASES.items():
            target = build(rev, last, Path(tmp))
            print(f"{rev} {last}: {target.relative_to(REPO)} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
