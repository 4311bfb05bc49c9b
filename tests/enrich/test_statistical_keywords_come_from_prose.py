"""The statistical enrich takes its keywords from a document's prose: fenced code blocks and ``$...$`` math are
not prose (``def``, ``import``, ``bin`` and a formula's ``theta`` were keywords of the bundled notes), and a
possessive is its word (``Sutton's`` and ``Sutton`` were two keywords)."""

from __future__ import annotations

from kb_indexer.enrich.keyphrases import CorpusStats, candidates, extract
from kb_indexer.index.markdown import without_code_blocks

NOTE = """# Testing with fixtures

Tests share setup through fixtures. A fixture yields what the tests need; testing code stays short.
Sutton's view: fixtures scale. Sutton wrote about scaling, and fixtures are Sutton's favourite.
The loss $\\nabla_\\theta J(\\theta)$ is shown once, costing $5 or $6.

```python
import pytest
def test_db(tmp_path):
    assert tmp_path
```

~~~
bin/activate
~~~
"""


def _keywords(text: str) -> list[str]:
    stats = CorpusStats.of([text, "an unrelated document about rivers", "another one about mountains"])
    return [k.keyword for k in extract(text, "Testing with fixtures", stats)]


def test_code_blocks_and_math_give_no_keyword():
    words = {w.lower() for w in _keywords(NOTE)}
    assert {"fixtures", "sutton"} <= words
    assert not words & {"import", "pytest", "def", "test_db", "tmp_path", "assert", "bin", "activate", "python",
                        "nabla_", "theta", "nabla_\\theta"}


def test_a_possessive_is_its_word():
    words = [w.lower() for w in _keywords(NOTE)]
    assert "sutton's" not in words and words.count("sutton") == 1


def test_the_prose_of_a_text_keeps_every_other_line():
    text = "a\n```\ncode\n~~~\nstill code\n```\nb\n  ~~~sh\nmore\n  ~~~\nc\n```\nunclosed"
    assert without_code_blocks(text) == "a\nb\nc"
    assert without_code_blocks("a\n```\nx\n```python\ny\n```\nb") == "a\nb"   # an info string never closes
    assert [p for p, _ in candidates("set $HOME/$USER paths")] == ["set", "home", "user", "paths"]
    assert [p for p, _ in candidates("Sutton's tests")] == ["sutton", "tests"]


def test_a_two_letter_word_is_a_keyword_only_as_an_acronym():
    """`enrich --no-llm` of the bundled reward-shaping note tagged it ``ng`` (of Andrew Ng) and ``true``."""
    text = ("# Shaping\n\nAndrew Ng and colleagues showed potential-based shaping. Ng proved it keeps the optimal "
            "policy; it is true for every MDP. Ng, Harada and Russell wrote it. The RL agent learns. RL agents "
            "shape rewards. It is true that shaping helps.\n")
    stats = CorpusStats.of([text, "an unrelated document about rivers", "another one about mountains"])
    words = {k.keyword.lower() for k in extract(text, "Shaping", stats)}
    assert "rl" in words and "shaping" in words
    assert not words & {"ng", "true"}
