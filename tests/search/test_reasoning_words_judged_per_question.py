"""The reasoning's matched words are judged against each question's own words: what one question's results
learnt about a bold span (kb_indexer.search.reasoning keeps that per question, for speed) never decides
for another question, and a list or a tuple of the same terms gives the same answer."""

from kb_indexer.search.reasoning import matched_words


def test_same_bold_span_judged_per_question():
    snippet = "the **agents** learn from **rewards** in a **grid**"

    assert matched_words(snippet, ("agent", "reward")) == ["agents", "rewards"]
    assert matched_words(snippet, ("grid",)) == ["grid"]
    assert matched_words(snippet, ("agent", "reward")) == ["agents", "rewards"]   # asked again
    assert matched_words(snippet, ["agent", "reward"]) == ["agents", "rewards"]   # a list of the terms
    assert matched_words("**agents** and **agents**", ("agent",)) == ["agents"]  # once each
    assert matched_words(snippet, ("policy",)) == []
