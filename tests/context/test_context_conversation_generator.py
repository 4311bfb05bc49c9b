"""bench/context_conv.py: synthetic conversations with planted facts, for the context compression benchmark."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.context_conv import (CONNECTORS, FAMILIES, KINDS, TEMPLATES, VOCAB, generate,  # noqa: E402
                                generate_set, main)

TURNS = (20, 60, 200)
SEEDS = (0, 1)


@pytest.fixture(scope="module")
def conversations() -> list[dict]:
    return [generate(seed, turns, family) for family in FAMILIES for turns in TURNS for seed in SEEDS]


def test_same_seed_gives_the_same_conversation():
    first = json.dumps(generate(3, 40, "dev"), sort_keys=True)
    assert json.dumps(generate(3, 40, "dev"), sort_keys=True) == first
    assert json.dumps(generate(4, 40, "dev"), sort_keys=True) != first
    assert generate(3, 40, "heldout")["messages"] != generate(3, 40, "dev")["messages"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("turns", [20, 200])
def test_shape_system_then_alternating_roles_ending_with_a_user_question(family, turns):
    conv = generate(0, turns, family)
    assert conv["id"] == f"{family}-0-{turns}"
    assert (conv["family"], conv["seed"], conv["turns"]) == (family, 0, turns)
    messages = conv["messages"]
    assert len(messages) == 2 * turns + 2
    assert messages[0]["role"] == "system"
    assert [m["role"] for m in messages[1:]] == ["user", "assistant"] * turns + ["user"]
    assert all(m["content"].strip() and "\x00" not in m["content"] for m in messages)
    assert 3 <= len(conv["skills"]) <= 6
    assert {s["priority"] for s in conv["skills"]} == {"active", "relevant"}
    for skill in conv["skills"]:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)+", skill["name"])
        assert skill["content"].startswith(f"# {skill['name']}\n") and "## Steps" in skill["content"]
        assert 200 <= len(skill["content"]) <= 2500


def test_assistant_answers_come_from_the_knowledge_base(conversations):
    kb_text = " ".join(p.read_text(encoding="utf-8") for p in (REPO / "knowledge-base").rglob("*.md"))
    answers = [m["content"] for c in conversations for m in c["messages"] if m["role"] == "assistant"]
    long_ones = [a for a in answers if len(a) > 200]
    assert len(long_ones) > len(answers) / 2
    sentences = [s for a in long_ones for s in re.split(r"(?<=\.)\s+", a) if len(s) > 60 and "\n" not in s]
    from_kb = [s for s in sentences if s in kb_text]
    assert len(from_kb) > len(sentences) / 2
    assert any("```" in a for a in answers) and any("\n- " in a for a in answers)
    assert any(a.rstrip().endswith("?") for a in answers)


def test_every_fact_is_in_its_message_and_its_strings_nowhere_else(conversations):
    for conv in conversations:
        messages, skills = conv["messages"], " ".join(s["content"].lower() for s in conv["skills"])
        for fact in conv["facts"]:
            assert fact["kind"] in KINDS and fact["must_survive"]
            planted = messages[fact["turn"]]
            assert fact["turn"] < len(messages) - 1, "never in the latest question"
            assert planted["role"] == fact["role"]
            assert fact["text"] in planted["content"]
            for string in fact["must_survive"]:
                assert string in fact["text"]
                assert string.lower() not in skills, (conv["id"], string)
                for i, other in enumerate(messages):
                    if i != fact["turn"]:
                        assert string.lower() not in other["content"].lower(), (conv["id"], string, i)


def test_facts_are_one_per_four_to_six_exchanges_spread_over_the_whole_conversation(conversations):
    for conv in conversations:
        facts, n = conv["facts"], len(conv["messages"])
        assert conv["turns"] / 6 - 1 <= len(facts) <= conv["turns"] / 4 + 1, conv["id"]
        assert {f["kind"] for f in facts} == set(KINDS), conv["id"]
        thirds = {3 * f["turn"] // n for f in facts}
        assert thirds == {0, 1, 2}, conv["id"]
        assert min(f["turn"] for f in facts) <= 4 * 2 + 2, "the first fact comes early"
        turns = [f["turn"] for f in facts]
        assert turns == sorted(set(turns))
    roles = {(f["kind"], f["role"]) for c in conversations for f in c["facts"]}
    assert ("result", "assistant") in roles and ("decision", "user") in roles and ("decision", "assistant") in roles
    facts = [(c, f) for c in conversations for f in c["facts"]]
    embedded = [f for c, f in facts if c["messages"][f["turn"]]["content"].strip() != f["text"]]
    assert len(facts) / 3 < len(embedded) < len(facts), "some facts are a message of their own, most are not"


def _skeleton(fact: dict) -> str:
    text = fact["text"]
    for string in fact["must_survive"]:
        text = text.replace(string, "_")
    return re.sub(r"\d", "0", text[0].lower() + text[1:])


def _trigrams(family: str) -> set[tuple[str, ...]]:
    grams = set()
    for templates in TEMPLATES[family].values():
        for _, sentence, _ in templates:
            words = re.findall(r"[a-z0-9']+|\{\w+\}", sentence.lower())
            grams |= {tuple(words[i:i + 3]) for i in range(len(words) - 2)}
    return grams


def test_families_differ_in_wording_and_in_values(conversations):
    assert not _trigrams("dev") & _trigrams("heldout")
    for side in ("user", "assistant"):
        assert not set(CONNECTORS["dev"][side]) & set(CONNECTORS["heldout"][side])
    for slot, dev_values in VOCAB["dev"].items():
        if isinstance(dev_values, list) and isinstance(VOCAB["heldout"].get(slot), list):
            assert not set(dev_values) & set(VOCAB["heldout"][slot]), slot
    by_family = {family: [f for c in conversations if c["family"] == family for f in c["facts"]]
                 for family in FAMILIES}
    assert not {_skeleton(f) for f in by_family["dev"]} & {_skeleton(f) for f in by_family["heldout"]}
    dev_strings = {s.lower() for f in by_family["dev"] for s in f["must_survive"]}
    assert not dev_strings & {s.lower() for f in by_family["heldout"] for s in f["must_survive"]}
    assert len(dev_strings) > 0.75 * sum(len(f["must_survive"]) for f in by_family["dev"]), "values are varied"


def test_generate_set_and_the_command_line(tmp_path, capsys):
    convs = generate_set("heldout", sizes=(20, 30), seeds=range(2))
    assert [c["id"] for c in convs] == ["heldout-0-20", "heldout-1-20", "heldout-0-30", "heldout-1-30"]
    dump = tmp_path / "convs.json"
    assert main(["--family", "dev", "--sizes", "20", "--seeds", "2", "--dump", str(dump)]) == 0
    out = capsys.readouterr().out
    assert "dev-0-20" in out and "dev-1-20" in out and "facts=" in out and "messages=" in out
    assert [c["id"] for c in json.loads(dump.read_text(encoding="utf-8"))] == ["dev-0-20", "dev-1-20"]


def test_another_knowledge_base_folder(tmp_path):
    kb = tmp_path / "kb"
    (kb / "sub").mkdir(parents=True)
    (kb / "gardening.md").write_text("# Gardening\n\nTomatoes need full sun. They also need steady watering.\n\n"
                                     "## Soil\n\nLoam drains well and holds nutrients. Compost improves it.\n"
                                     "Clay soil stays wet for a long time.\n", encoding="utf-8")
    (kb / "sub" / "bees.md").write_text("# Bees\n\n## Hives\n\nA hive holds one queen. Workers forage for "
                                        "nectar.\n\n- drones\n- workers\n", encoding="utf-8")
    conv = generate(0, 20, "dev", kb_root=kb)
    assistant = " ".join(m["content"] for m in conv["messages"] if m["role"] == "assistant")
    assert "Tomatoes need full sun." in assistant or "A hive holds one queen." in assistant
    assert "policy gradient" not in assistant.lower()


def test_bad_arguments():
    with pytest.raises(ValueError):
        generate(0, 20, "test")
    with pytest.raises(ValueError):
        generate(0, 0)
