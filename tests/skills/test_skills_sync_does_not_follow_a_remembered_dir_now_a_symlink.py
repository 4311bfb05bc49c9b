"""`skills sync` (no directory given) does not follow a remembered skills directory that has been swapped
for a symlink since it was given: the directory is reported, stays remembered as it was (not replaced by
the link's target), nothing of the target is indexed, the skills indexed from it are kept; `--forget`
accepts it as named."""

from __future__ import annotations

from tests.skills.test_skills_sync import write


def test_a_remembered_dir_swapped_for_a_symlink_is_reported_not_followed(small, tmp_path):
    k, _ = small
    skills, decoy = tmp_path / "skills", tmp_path / "decoy"
    write(skills, "one", "one", "One")
    write(decoy, "planted", "planted", "Planted by whoever swapped the folder")
    k.skills.sync([str(skills)])
    skills.rename(tmp_path / "skills.orig")
    skills.symlink_to(decoy, target_is_directory=True)
    out = k.skills.sync()
    assert [d["path"] for d in k.skills.all()["dirs"]] == [str(tmp_path.resolve() / "skills")]
    assert [e["file"] for e in out["errors"]] == [str(tmp_path.resolve() / "skills")]
    assert "leads elsewhere" in out["errors"][0]["message"]
    assert out["added"] == [] and out["removed"] == []
    assert [s["name"] for s in k.skills.all()["skills"]] == ["one"]
    assert k.skills.show("one")["source_dir"] == str(tmp_path.resolve() / "skills")
    out = k.skills.sync(forget=[str(skills)])
    assert out["removed"] == ["one"] and k.skills.all()["dirs"] == []
