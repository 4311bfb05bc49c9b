"""One member tries to steer a shared PostgreSQL index: what the learning policy lets through, and what
`learned remove --asker` gives back.

    python3 bench/poisoning.py

It starts its own PostgreSQL server (the dev extra's ``pgserver``), and for each policy gives a fresh database
over the bundled knowledge base, with real login roles granted as docs/teams.md says: the owner, three members
(alice, bob, mallory) and a curator (carol).

1. alice and bob, each in a long-lived process of their own (the Python API, as an agent's MCP server uses it),
   mark the right note helpful for 3 of alice's 10 questions; the owner runs ``kbindex learn``. alice's top 10
   for her 10 questions (paths and scores) is the *baseline*.
2. mallory asks 30 questions (3 rewordings of each of alice's 10) and marks one unrelated note
   (``sqlite-full-text-search.md``) helpful on each 10 times: 300 marks. mallory runs ``kbindex learn``.
3. alice asks her 10 questions again: in how many is the unrelated note in the top 3 where it was not before.
4. carol (a curator) runs ``kbindex learned remove --asker mallory``; alice's top 10 are compared with the
   baseline (paths and scores, exactly).

Policies: ``auto`` with one asker enough and no share cap, once with a curator who then approves whatever waits
for review (the attack's baseline: what an index learned before the policy existed), and once without;
``auto`` with 2 distinct askers and a 50% share cap (PostgreSQL's default); and ``review`` with the same.
Targets: the unrelated note enters no top 3 under the last two; ``remove --asker`` restores every ranking
exactly.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.stress_common import kb_run  # noqa: E402
from bench.team import Servers, must  # noqa: E402

POISON = "sqlite-full-text-search.md"
ALICE = [  # (question, the note that answers it)
    ("how does alphago work", "alphago-architecture.md"),
    ("what is monte carlo tree search", "monte-carlo-tree-search.md"),
    ("how do policy gradient methods learn", "policy-gradient-methods.md"),
    ("what is temporal difference learning", "temporal-difference-learning.md"),
    ("how to shape rewards for an agent", "reward-shaping.md"),
    ("what is a markov decision process", "markov-decision-processes.md"),
    ("how does retrieval augmented generation work", "retrieval-augmented-generation.md"),
    ("how are large language models fine tuned", "fine-tuning-llms.md"),
    ("what is the transformer architecture", "transformer-architecture.md"),
    ("learning from labelled examples", "supervised-learning-basics.md"),
]
REWORDINGS = ("{q}", "{q} explained", "please tell me {q}")
MARKS_EACH = 10
POLICIES = {"auto, 1 asker, no cap, a curator approves all": ("auto", 1, 1.0, True),
            "auto, 1 asker, no cap": ("auto", 1, 1.0, False),
            "auto, 2 askers, 50% cap": ("auto", 2, 0.5, False),
            "review, 2 askers, 50% cap": ("review", 2, 0.5, False)}
MEMBER = ["GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
          "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}"]


def role_url(owner_url: str, name: str, grants: list[str]) -> str:
    """A login role ``name`` with ``grants`` on the index's database (docs/teams.md, Roles)."""
    import psycopg

    with psycopg.connect(owner_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE ROLE "{name}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA public TO "{name}"')
        for grant in grants:
            conn.execute(grant.format(role=f'"{name}"'))
    scheme, rest = owner_url.split("://", 1)
    return f"{scheme}://{name}@{rest.split('@', 1)[1]}"


def curator_group(owner_url: str) -> None:
    import psycopg

    with psycopg.connect(owner_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'kb_curator'").fetchone() is None:
            conn.execute("CREATE ROLE kb_curator NOLOGIN")


def tops(url: str) -> list[list[tuple[str, float]]]:
    """alice's top 10 for her questions, through this checkout's ``kbindex query`` (as an agent calls it)."""
    out = []
    for q, _ in ALICE:
        res = must(kb_run("query", q, "--limit", "10", db=url), f"query {q!r}")
        out.append([(r["filepath"], round(r["relevance_score"], 9)) for r in res["results"]])
    return out


def in_top3(ranking: list[tuple[str, float]]) -> bool:
    return POISON in [p for p, _ in ranking[:3]]


def mark(url: str, marks: list[tuple[str, str, int]]) -> None:
    """(question, helpful note, times): asked and marked by one long-lived process of the role ``url`` logs in as."""
    from kb_indexer.api import KnowledgeBase

    with KnowledgeBase.open(url) as kb:
        for question, note, times in marks:
            qid = kb.query(question)["query_id"]
            for _ in range(times):
                kb.learning.feedback(qid, [note], [])


def run_policy(servers: Servers, name: str, policy: tuple[str, int, float, bool], kb_dir: Path) -> dict[str, Any]:
    owner = servers.target("postgres", name)
    must(kb_run("init", "--kb", kb_dir, db=owner), "init")
    must(kb_run("sync", db=owner), "sync")
    curator_group(owner)
    alice, bob, mallory = (role_url(owner, r, MEMBER) for r in ("alice", "bob", "mallory"))
    carol = role_url(owner, "carol", MEMBER + ["GRANT kb_curator TO {role}"])
    mode, min_askers, max_share, approve_all = policy
    must(kb_run("learned", "policy", "--set", mode, "--min-askers", min_askers, "--max-share", max_share,
                db=owner), "policy")
    legit = [(q, note, 1) for q, note in ALICE[:3]]
    mark(alice, legit)
    mark(bob, legit)
    must(kb_run("learn", db=owner), "learn (legitimate marks)")
    if mode == "review":
        pending = must(kb_run("learned", "list", "--pending", db=owner), "pending")["learned"]
        if pending:
            must(kb_run("learned", "approve", *[str(i["id"]) for i in pending], db=carol), "approve")
    baseline = tops(alice)
    t0 = time.perf_counter()
    mark(mallory, [(r.format(q=q), POISON, MARKS_EACH) for q, _ in ALICE for r in REWORDINGS])
    attack_s = time.perf_counter() - t0
    learned = must(kb_run("learn", db=mallory), "learn (mallory)")
    pending = must(kb_run("learned", "list", "--pending", db=owner), "pending")["learned"]
    if approve_all and pending:   # a curator who approves whatever waits
        must(kb_run("learned", "approve", *[str(i["id"]) for i in pending], db=carol), "approve (all)")
    after = tops(alice)
    removed = must(kb_run("learned", "remove", "--asker", "mallory", db=carol), "remove --asker")
    restored = tops(alice)
    entered = sum(1 for b, a in zip(baseline, after) if in_top3(a) and not in_top3(b))
    return {"policy": name, "marks": len(ALICE) * len(REWORDINGS) * MARKS_EACH, "attack_s": round(attack_s, 1),
            "learn_applied": learned["applied"], "learn_below_policy": learned.get("below_policy"),
            "pending_after_attack": len(pending), "approved_blindly": approve_all and bool(pending),
            "poison_entered_top3": entered,
            "poison_top3_before": sum(map(in_top3, baseline)),
            "feedback_excluded": removed["feedback_excluded"], "withdrawn": removed["withdrawn"],
            "restored_exactly": restored == baseline,
            "differing_after_remove": sum(1 for b, r in zip(baseline, restored) if b != r)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbindex-poison-") as tmp:
        servers = Servers(Path(tmp))
        try:
            rows = [run_policy(servers, f"poison_{i}", p, REPO / "knowledge-base") | {"policy": label}
                    for i, (label, p) in enumerate(POLICIES.items())]
        finally:
            servers.close()
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    cols = ("policy", "learn_applied", "learn_below_policy", "pending_after_attack", "approved_blindly",
            "poison_entered_top3",
            "withdrawn", "restored_exactly")
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))


if __name__ == "__main__":
    main()
