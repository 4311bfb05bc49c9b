"""`kbindex enrich --no-llm` on a folder of personal notes: the keywords are what a note is about, not the verbs,
adverbs and vague words any text uses. A note on salt in bread was tagged ``salt, bread, adds, fast``, others
``enough``, ``back``, ``try``; those became query keywords and co-occurrence suggestions (``back`` / ``dent``).
A small folder gives document frequency no say, so the word lists, the verb cues and the word order do."""

from __future__ import annotations

import json

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.enrich.keyphrases import CorpusStats, extract

NOTES = {
    "salt-in-bread.md": """# Salt in bread

Salt adds flavour and tightens the gluten. Without it the dough rises too fast and the loaf tastes flat; it
ferments fast and the crumb tears. Use 2% of the flour weight and add it after the autolyse.
""",
    "car-dent.md": """# Dent in the car door

A shallow dent on the passenger door. Poured hot water over the panel, then pulled it back with a suction
cup. The first try did nothing; the second popped it back. A glue puller kit did the rest.
""",
    "radiators.md": """# Bleeding radiators

The radiators were cold at the top. Open the bleed valve with a radiator key until water comes out, then
close it. Check the boiler pressure is high enough afterwards and top it up if it is not.
""",
    "rice.md": """# Rice for the week

Rinse the rice, cook it with enough water, and cool it fast. Cooked rice keeps two days in the fridge.
Try basmati; try jasmine too. Reheat it only once.
""",
    "rebase.md": """# Git rebase

When a rebase stops on a conflict, fix the markers, git add the files and continue. To go back to where you
started, abort the rebase; the reflog keeps the old commits.
""",
    "tyres.md": """# Tyre pressure

Pump the tyres until the pressure is high enough: 2.4 bar front, 2.6 rear. Enough air saves fuel.
""",
    "tap.md": """# Dripping tap

The kitchen tap dripped when closed. Turn off the isolation valve, take the handle off and unscrew the
ceramic cartridge. A new cartridge of the same brand stopped the drip.
""",
}
WEAK = {"adds", "fast", "enough", "back", "try", "first", "afterwards", "nothing", "comes", "days", "week",
        "tightens", "close", "check"}


@pytest.fixture(scope="module")
def enriched(tmp_path_factory):
    """The notes' generated keywords and their keywords files, through ``enrich --all --no-llm``."""
    tmp = tmp_path_factory.mktemp("notes")
    root = tmp / "kb"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    k, _ = KnowledgeBase.init(tmp / "kbindex.db", root)
    assert k.sync()["errors"] == []
    out = k.enrich.documents(all_=True, use_llm=False)
    k.close()
    assert out["enriched"] == len(NOTES)
    files = {name: json.loads((root / name.replace(".md", ".keywords.json")).read_text(encoding="utf-8"))
             for name in NOTES}
    return {d["filepath"]: d["generated_keywords"] for d in out["documents"]}, files


def test_a_note_on_salt_in_bread_gets_neither_adds_nor_fast(enriched):
    keywords, files = enriched
    salt = keywords["salt-in-bread.md"]
    assert not {"adds", "fast", "tightens"} & set(salt)
    assert {"salt", "bread", "gluten", "dough", "loaf"} <= set(salt)
    primary = files["salt-in-bread.md"]["categories"]["primary"]
    assert primary[:2] == ["salt", "bread"] and not {"adds", "fast"} & set(primary)


def test_no_note_gets_enough_back_try_or_another_word_any_text_uses(enriched):
    keywords, _ = enriched
    found = {(note, kw) for note, kws in keywords.items() for kw in kws if kw in WEAK}
    assert found == set()


def test_the_places_the_weak_words_took_go_to_the_notes_own_terms(enriched):
    keywords, _ = enriched
    assert {"dent", "panel", "suction", "glue"} <= set(keywords["car-dent.md"])
    assert {"radiators", "bleed", "valve", "boiler", "pressure"} <= set(keywords["radiators.md"])
    assert {"rebase", "git", "conflict", "markers", "reflog"} <= set(keywords["rebase.md"])
    assert {"rice", "rinse", "fridge", "basmati", "jasmine"} <= set(keywords["rice.md"])
    assert {"tap", "cartridge", "ceramic", "isolation", "drip"} <= set(keywords["tap.md"])
    assert {"tyre", "pressure", "tyres", "bar", "fuel"} <= set(keywords["tyres.md"])


def _keywords(text: str, title: str, others: list[str]) -> list[str]:
    stats = CorpusStats.of([f"{title} . {text}", *others])
    return [k.keyword.lower() for k in extract(text, title, stats)]


def test_a_verb_no_list_knows_is_told_by_its_neighbours():
    """``empowers`` and ``streamlines`` are in no word list: "it empowers", "empowers the" make them verbs."""
    text = ("Crewboard empowers the support team. It streamlines the inbox and it empowers agents to answer "
            "tickets; it streamlines escalations, triage and handovers for the support team.")
    words = _keywords(text, "crewboard", ["a note on gardens", "a note on rivers", "one on mountains"])
    assert {"crewboard", "support", "team", "tickets", "triage"} <= set(words)
    assert not {"empowers", "streamlines"} & set(words)


def test_a_low_content_word_that_names_something_stays():
    """``things`` says nothing in "a few things to try", but "Things" after a lower-case word is a name."""
    app = "Add todos to the local Things database. The Things app keeps projects and areas."
    vague = "A few things to pack: a tyre pressure gauge and the spare wheel."
    others = ["a note on gardens", "a note on rivers"]
    assert "things" in _keywords(app, "todo app", [vague, *others])
    assert "things" not in _keywords(vague, "road trip", [app, *others])
