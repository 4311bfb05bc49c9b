"""A keywords file or a document swapped for a symlink to an outside file (or a folder on its way swapped
for a symlink to an outside folder) after kbindex checked it, right before it is opened, is refused, never
read: the open itself walks from the knowledge-base root one component at a time without following a
symlink that leads outside.

The swap is made deterministic: it happens at the ``os.open`` that reads the file (or enters the folder),
after every check on the path. Symlinks that stay inside the root are still read. Each test runs as a single
read does and as a sync reads (inside ``cached_folders``: a folder opened once for its files)."""

from __future__ import annotations

import json
import os

import pytest

from helpers import write_doc
from kb_indexer.beneath import cached_folders
from kb_indexer.errors import ValidationError
from kb_indexer.index.files import load_keywords_file
from kb_indexer.index.loader import load_document

SECRET = json.dumps({"filepath": "a.md", "summary": "from outside", "keywords": ["exfiltrated"]})


@pytest.fixture(autouse=True, params=["one read", "a sync's reads"])
def reads(request):
    if request.param == "one read":
        yield
    else:
        with cached_folders():
            yield


@pytest.fixture
def root_and_outside(tmp_path):
    root = tmp_path / "kb"
    write_doc(root, "notes/a.md", "# Doc A\n\nbody text\n",
              keywords={"filepath": "notes/a.md", "summary": "mine", "keywords": ["mine"]})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "a.keywords.json").write_text(SECRET, encoding="utf-8")
    (outside / "a.md").write_text("# Secret\n\nexfiltrated text\n", encoding="utf-8")
    return root, outside


def _swap_when_opened(monkeypatch, ending: str | tuple[str, ...], swap) -> None:
    """Run ``swap`` at the first ``os.open`` of a path ending with ``ending`` (a whole path, or one name
    opened relative to a folder), just before the real open."""
    real = os.open
    done = []

    def hooked(path, *args, **kwargs):
        if not done and os.fspath(path).endswith(ending):
            done.append(True)
            swap()
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", hooked)


def _link_file(path, target):
    def swap():
        os.replace(path, path.with_name(path.name + ".real"))
        path.symlink_to(target)
    return swap


def _link_folder(folder, target):
    def swap():
        os.rename(folder, folder.with_name(folder.name + ".real"))
        folder.symlink_to(target, target_is_directory=True)
    return swap


def test_a_keywords_file_swapped_for_an_outside_link_before_it_is_opened_is_refused(root_and_outside, monkeypatch):
    root, outside = root_and_outside
    path = root / "notes" / "a.keywords.json"
    _swap_when_opened(monkeypatch, "a.keywords.json", _link_file(path, outside / "a.keywords.json"))
    with pytest.raises(ValidationError, match="outside the knowledge-base root") as exc:
        load_keywords_file(root, path, "a.keywords.json")
    assert exc.value.code == "outside_kb"


def test_a_folder_swapped_for_an_outside_link_before_a_keywords_file_is_opened_is_refused(root_and_outside, monkeypatch):
    root, outside = root_and_outside
    # the folder when it is entered on its own, or the whole path when it is opened at once
    _swap_when_opened(monkeypatch, ("notes", "notes/a.keywords.json"), _link_folder(root / "notes", outside))
    with pytest.raises(ValidationError, match="outside the knowledge-base root"):
        load_keywords_file(root, root / "notes" / "a.keywords.json", "a.keywords.json")


def test_a_document_swapped_for_an_outside_link_before_it_is_opened_is_refused(root_and_outside, monkeypatch):
    root, outside = root_and_outside
    _swap_when_opened(monkeypatch, "a.md", _link_file(root / "notes" / "a.md", outside / "a.md"))
    with pytest.raises(ValidationError, match="outside the knowledge-base root"):
        load_document(root, "notes/a.md", lenient=True)


def test_a_folder_swapped_for_an_outside_link_before_a_document_is_opened_is_refused(root_and_outside, monkeypatch):
    root, outside = root_and_outside
    _swap_when_opened(monkeypatch, ("notes", "notes/a.md"), _link_folder(root / "notes", outside))
    with pytest.raises(ValidationError, match="outside the knowledge-base root"):
        load_document(root, "notes/a.md", lenient=True)


@pytest.mark.parametrize("target", ["../../elsewhere/a.keywords.json", "ABSOLUTE", "../notes/../../elsewhere/a.md"])
def test_a_link_leading_outside_is_refused(root_and_outside, target):
    root, outside = root_and_outside
    path = root / "notes" / "b.keywords.json"
    path.symlink_to(outside / "a.keywords.json" if target == "ABSOLUTE" else target)
    with pytest.raises(ValidationError, match="outside the knowledge-base root"):
        load_keywords_file(root, path, "b.keywords.json")


@pytest.mark.parametrize("target", ["../meta/a.json", "ABSOLUTE", "../shared/a.json"])
def test_links_that_stay_inside_the_root_are_read(root_and_outside, target):
    root, _ = root_and_outside
    data = {"filepath": "notes/a.md", "summary": "shared", "keywords": ["inside"]}
    write_doc(root, "meta/a.json", json.dumps(data))
    (root / "shared").symlink_to("meta", target_is_directory=True)   # a folder link inside the root, followed
    path = root / "notes" / "b.keywords.json"
    path.symlink_to(root / "meta" / "a.json" if target == "ABSOLUTE" else target)
    assert load_keywords_file(root, path, "b.keywords.json")[0] == data
