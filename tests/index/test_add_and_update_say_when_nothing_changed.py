"""`add` (and `update`) of a file the index already holds as it is says ``unchanged``, not ``updated``; an edited
one says ``updated``; a new one ``added``."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.both_engines


def test_the_action_says_what_storing_changed(small):
    handle, kbdir = small
    (kbdir / "a.md").write_text("# A\n\nfirst text\n", encoding="utf-8")
    assert handle.add(str(kbdir / "a.md"))["action"] == "added"
    assert handle.add(str(kbdir / "a.md"))["action"] == "unchanged"
    assert handle.update("a.md")["action"] == "unchanged"
    (kbdir / "a.md").write_text("# A\n\nsecond text\n", encoding="utf-8")
    assert handle.update("a.md")["action"] == "updated"
    (kbdir / "a.md").write_text("# A\n\nthird text\n", encoding="utf-8")
    assert handle.add(str(kbdir / "a.md"))["action"] == "updated"
