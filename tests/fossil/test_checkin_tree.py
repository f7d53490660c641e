"""A check-in's tree written out for a release's build (checkin_tree.py, D45): the files a real
Fossil committed, and no name that could reach outside the tree it is written to (D41)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.fossil.checkin_tree import CheckinTreeError, _parts, checkin_files, write_checkin_tree


def test_a_checkins_files_are_written_as_committed(served, tmp_path: Path) -> None:
    served.commit("alice", "README.md", "# a project\n")
    checkin = served.commit("alice", "setup.cfg", "[metadata]\nname = x\n")
    with served.repository() as repository:
        files = checkin_files(repository, checkin)
        assert {"README.md", "setup.cfg"} <= set(files)
        count = write_checkin_tree(repository, checkin, str(tmp_path / "tree"))
    assert count == len(files)
    assert (tmp_path / "tree" / "README.md").read_text() == "# a project\n"
    assert (tmp_path / "tree" / "setup.cfg").read_text() == "[metadata]\nname = x\n"
    assert os.stat(tmp_path / "tree" / "setup.cfg").st_mode & 0o777 == 0o644


@pytest.mark.parametrize("name", ["../up", "a/../../up", "/etc/passwd", "a//b", "./a", "a/", "", "a/\0b",
                                  "x" * 1100])
def test_a_name_that_is_not_a_plain_relative_path_is_refused(name: str) -> None:
    with pytest.raises(CheckinTreeError, match="is not a plain relative name"):
        _parts(name)


@given(st.lists(st.text(st.characters(blacklist_characters="/\0"), min_size=1, max_size=20), min_size=1,
                max_size=5))
def test_a_name_taken_stays_below_the_tree(parts: list[str]) -> None:
    name = "/".join(parts)
    try:
        taken = _parts(name)
    except CheckinTreeError:
        assert any(part in (".", "..") for part in parts)
        return
    joined = os.path.normpath(os.path.join("/tree", *taken))
    assert joined.startswith("/tree/")
