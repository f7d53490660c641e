"""The mirror of a real history (D49): click.fossil (3,335 check-ins, ../shared/data) exported
the way the node's update does it (node_service/git_update.py: the copy, `fossil git export`,
the kept leaves, the atomic publish), cloned with the real `git`, and compared with Fossil's
own tables: every check-in with its author and date, every branch head, every tag; and its
commits are the very ones Fossil's own export makes (the node's filter of the stream changes
no well-formed committer line).

What git cannot say as Fossil does is asserted as what it is (docs/git.md):
- check-ins that no branch tag names (history imported from git) are the branch `unknown`,
  as Fossil's export names it: its head is the one leaf with no branch tag, and its history
  holds only such check-ins;
- Fossil's import marks the root with a propagating `trunk` tag that reaches every check-in:
  a git tag names one commit, so the export keeps only the tags set on one check-in each;
- two check-ins with no child (tags 0.6 and 0.7) are not in Fossil's `leaf` table, so no
  branch holds them: their tags do.

On the host (the container does not see ../shared/data); skipped, saying so, without the file.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from ocx.fossil import git_export
from ocx.fossil.git_export import exported_commits, keep_copy, leaves
from ocx.fossil.repository import Repository
from ocx.git import mirror
from ocx.git.fast_import_filter import export
from ocx.git.program import run_git
from ocx.protocol.git_mirror import author_addresses

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = [Path(os.environ.get("OCX_CLICK_FOSSIL", "/nonexistent")), ROOT.parent / "shared/data/click.fossil",
              ROOT.parent.parent / "shared/data/click.fossil", Path("/work/shared/data/click.fossil")]
CLICK = next((path for path in CANDIDATES if path.is_file()), None)
BRANCH_TAG = 8  # Fossil's tag id of `branch`
UNIX_EPOCH_JULIAN = 2440587.5

if shutil.which("git") is None or shutil.which("fossil") is None:  # pragma: no cover - the image has both
    pytest.skip("git and fossil are needed", allow_module_level=True)


def fossil_tables(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def exported(source: Path, base: Path) -> Path:
    """A bare repository made from a copy of SOURCE as git_update.update_once makes the served one."""
    served_file, home = base / "served" / "click.fossil", base / "home"
    served_file.parent.mkdir()
    home.mkdir(mode=0o700)
    shutil.copy(source, served_file)
    with Repository(served_file) as repository:
        addresses = author_addresses(((user.login, user.contact) for user in repository.users()),
                                     repository.checkin_authors())
    copy, work, served = base / "copy.fossil", base / "work", base / "git" / "repository.git"
    keep_copy(served_file, copy, home=home)
    export(copy, work, addresses, home=home)
    commits = exported_commits(work)
    mirror.keep_leaves(work, {leaf: commits[leaf] for leaf in leaves(copy) if leaf in commits}, home=home)
    mirror.make_served(served, os.getgid(), home=home)
    mirror.publish(work, served, home=home)
    return served


class Clone:
    def __init__(self, served: Path, base: Path) -> None:
        self.home, self.path = base / "clone-home", base / "clone"
        run_git(["clone", "-q", str(served), str(self.path)], home=self.home)

    def git(self, *args: str) -> str:
        return run_git(list(args), home=self.home, cwd=self.path).stdout

    def commits(self, *revisions: str) -> dict[str, tuple[str, str, int, int]]:
        """Each commit of REVISIONS as its check-in's Fossil hash -> (author, address, author and committer
        times), from the `FossilOrigin-Name:` the export ends each message with."""
        shown = self.git("log", "--format=%x01%an%x00%ae%x00%at%x00%ct%x00"
                         "%(trailers:key=FossilOrigin-Name,valueonly,separator=)", *revisions)
        found = {}
        for entry in filter(None, shown.split("\x01")):
            name, address, authored, committed, origin = entry.strip("\n").split("\x00")
            found[origin.strip()] = (name, address, int(authored), int(committed))
        return found

    def origin_of(self, revision: str) -> str:
        return self.git("log", "-1", "--format=%(trailers:key=FossilOrigin-Name,valueonly,separator=)",
                        revision).strip()


@pytest.mark.skipif(CLICK is None, reason="click.fossil not found (../shared/data or OCX_CLICK_FOSSIL)")
def test_the_mirror_of_click_holds_what_fossils_tables_hold(tmp_path):
    assert CLICK is not None
    clone = Clone(exported(CLICK, tmp_path), tmp_path)
    # Root's filter of the export's stream (git/fast_import_filter.py) changes no well-formed committer:
    # the commits are the very ones Fossil's own export makes from the same copy.
    git_export.export(tmp_path / "copy.fossil", tmp_path / "own", {}, home=tmp_path / "home")
    assert exported_commits(tmp_path / "own") == exported_commits(tmp_path / "work")
    fossil = fossil_tables(CLICK)
    checkins = {uuid: (user, (mtime - UNIX_EPOCH_JULIAN) * 86400.0) for uuid, user, mtime in fossil.execute(
        "SELECT b.uuid, e.user, e.mtime FROM event e JOIN blob b ON b.rid=e.objid WHERE e.type='ci'")}
    branch_of = dict(fossil.execute("SELECT b.uuid, x.value FROM tagxref x JOIN blob b ON b.rid=x.rid"
                                    " WHERE x.tagid=? AND x.tagtype>0", (BRANCH_TAG,)))
    fossil_leaves = {uuid for (uuid,) in fossil.execute("SELECT b.uuid FROM leaf JOIN blob b ON b.rid=leaf.rid")}
    childless = {uuid for (uuid,) in fossil.execute(
        "SELECT b.uuid FROM event e JOIN blob b ON b.rid=e.objid WHERE e.type='ci'"
        " AND NOT EXISTS (SELECT 1 FROM plink WHERE pid=e.objid)")}
    set_on_one = {}  # a tag set on a check-in itself (tagtype 1), not propagated to its descendants
    for name, uuid in fossil.execute("SELECT substr(t.tagname, 5), b.uuid FROM tag t JOIN tagxref x USING(tagid)"
                                     " JOIN blob b ON b.rid=x.rid WHERE t.tagname LIKE 'sym-%' AND x.tagtype=1"):
        set_on_one.setdefault(name, set()).add(uuid)
    trunk = fossil.execute("SELECT x.tagtype, count(*) FROM tagxref x JOIN tag t USING(tagid)"
                           " WHERE t.tagname='sym-trunk' GROUP BY x.tagtype").fetchall()
    fossil.close()

    # Every check-in, once, with its author as Fossil holds it and its date to the second.
    assert len(checkins) == 3335
    assert int(clone.git("rev-list", "--all", "--count")) == len(checkins)
    commits = clone.commits("--all")
    assert set(commits) == set(checkins)
    for uuid, (name, address, authored, committed) in commits.items():
        user, seconds = checkins[uuid]
        assert name == user and committed == authored, (uuid, name, user)
        # No login of these names, and imported, sent by none: the names (addresses here) are no address
        # (D21, protocol/git_mirror.py), though Fossil's own export would make each its own address.
        assert address == "", (uuid, address)
        # Fossil 2.21's export truncates a float of its D card's seconds: the same second or the one before.
        assert abs(authored - seconds) < 1.1, (uuid, authored, seconds)

    # Branch heads: one per Fossil leaf, named by its branch tag, `unknown` for the leaf with none.
    heads = {ref.removeprefix("refs/remotes/origin/"): clone.origin_of(ref)
             for ref in clone.git("for-each-ref", "--format=%(refname)", "refs/remotes/origin/").split()
             if ref != "refs/remotes/origin/HEAD"}
    assert len(fossil_leaves) == 4
    assert heads == {branch_of.get(leaf) or "unknown": leaf for leaf in fossil_leaves}
    assert set(heads) == set(branch_of.values()) | {"unknown"} == {"main", "stable", "parser-rewrite-1", "unknown"}
    assert not any(name.startswith("fossil-leaf/") for name in heads)  # each branch has one leaf here

    # `unknown` holds check-ins no branch tag names, and all of them but the two childless ones Fossil's
    # leaf table leaves out: those are held by their tags alone.
    no_branch = set(checkins) - set(branch_of)
    assert len(no_branch) == 2174
    on_unknown = set(clone.commits("origin/unknown"))
    assert on_unknown <= no_branch
    only_tagged = no_branch - on_unknown
    assert only_tagged == (childless - fossil_leaves)
    assert {name for name, held in set_on_one.items() if held & only_tagged} == {"0.6", "0.7"}
    assert not set(clone.commits("--remotes=origin")) & only_tagged

    # Tags: exactly Fossil's tags set on one check-in each, at that check-in; `trunk` propagates to all.
    tags = {ref.removeprefix("refs/tags/"): clone.origin_of(ref)
            for ref in clone.git("for-each-ref", "--format=%(refname)", "refs/tags/").split()}
    assert len(tags) == 71
    assert {name: {uuid} for name, uuid in tags.items()} == set_on_one
    assert trunk == [(2, len(checkins))] and "trunk" not in tags
