"""The way back (D50, D21), for real: a `fossil server`, a mirror made by
`fossil git export` (the stand-in for the node's /ext/git), `git clone` of
it, commits made with the real `git`, `ocx git import` into a person's own
clone, and their `fossil push`: the server then holds check-ins with the
commits' messages, files and order, sent by that person's login."""
from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocx.cli.cli import app
from ocx.fossil.lineage import CloneLineage
from ocx.fossil.program import run_fossil
from ocx.git.program import run_git
from tests.fossil.conftest import Served, start_served

if shutil.which("git") is None:  # pragma: no cover - the image has it
    pytest.skip("git is not installed", allow_module_level=True)

IDENTITY = {"GIT_AUTHOR_NAME": "Bob", "GIT_AUTHOR_EMAIL": "bob@example.org", "GIT_COMMITTER_NAME": "Bob",
            "GIT_COMMITTER_EMAIL": "bob@example.org"}


@pytest.fixture
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server per test: the check-ins one test makes move another's trunk."""
    running = start_served(tmp_path_factory.mktemp("served"))
    try:
        running.commit("alice", "keep.txt", "kept\n")
        running.commit("alice", "change.txt", "before\n")
        running.commit("alice", "gone.txt", "to be deleted\n")
        yield running
    finally:
        running.server.stop()


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def ocx_git_import(*args: str | Path) -> Ran:
    """`ocx git import ARGS` through the command line's own parser, in this process (so measured)."""
    done = CliRunner().invoke(app, ["git", "import", *map(str, args)])
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return Ran(done.exit_code, done.stdout, done.stderr)


class Mirror:
    """The node's mirror's stand-in (an admin's clone exported by Fossil) and a person's git clone of it."""

    def __init__(self, served: Served, base: Path) -> None:
        self.served, self.base = served, base
        self.home = base / "git-home"
        self.export_dir = base / "mirror"
        self.work = base / "work"

    def export(self) -> None:
        admin = self.served.clone("admin")
        admin.pull()
        run_fossil(["git", "export", str(self.export_dir), "-R", str(admin.path)], home=admin.home)

    def git(self, *args: str) -> str:
        return run_git(list(args), home=self.home, cwd=self.work, env=IDENTITY).stdout

    def clone(self) -> None:
        run_git(["clone", str(self.export_dir), str(self.work)], home=self.home)

    def commit(self, message: str, writes: dict[str, str], deletes: tuple[str, ...] = (),
               executable: tuple[str, ...] = (), date: str | None = None) -> str:
        for name, text in writes.items():
            (self.work / name).parent.mkdir(parents=True, exist_ok=True)
            (self.work / name).write_text(text)
            (self.work / name).chmod(0o755 if name in executable else 0o644)
        if deletes:
            self.git("rm", "-q", "--", *deletes)
        self.git("add", "-A")
        run_git(["commit", "-q", "-m", message], home=self.home, cwd=self.work,
                env={**IDENTITY, **({"GIT_AUTHOR_DATE": date} if date else {})})
        return self.git("rev-parse", "HEAD").strip()


def server_checkin(served: Served, comment: str) -> str:
    rows = served.sql("SELECT b.uuid FROM event e JOIN blob b ON b.rid=e.objid WHERE e.type='ci' AND e.comment=?",
                      (comment,))
    assert len(rows) == 1, f"{comment!r}: {len(rows)} check-ins on the server"
    return rows[0][0]


def server_files(served: Served, checkin: str) -> dict[str, bytes]:
    with CloneLineage(served.path) as repository:
        return {name: repository.content(f.hash) for name, f in repository.files_of(checkin).items()}


def test_commits_in_git_come_back_as_the_persons_checkins_in_order(served: Served, tmp_path: Path) -> None:
    mirror = Mirror(served, tmp_path)
    mirror.export()
    mirror.clone()
    bob = served.clone("bob")
    first = mirror.commit("bob changes a file and adds one\n\nwith a body", {"change.txt": "after\n",
                                                                             "new/file.txt": "new\n"},
                        date="2020-01-02T03:04:05Z")  # older than its parent: the author's date is kept
    second = mirror.commit("bob deletes a file", {}, deletes=("gone.txt",))
    mirror.git("checkout", "-q", "-b", "feature")
    mirror.commit("bob starts a feature", {"tool.sh": "#!/bin/sh\necho hi\n"}, executable=("tool.sh",))

    dry = ocx_git_import("master", "--clone", bob.path, "--git", mirror.work, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would make {first[:12]} on trunk as bob" in dry.stdout and f"would make {second[:12]}" in dry.stdout
    with CloneLineage(bob.path) as clone:
        assert clone.branch_size("trunk") == 4, "a dry run made a check-in"

    done = ocx_git_import("master", "--clone", bob.path, "--git", mirror.work)
    assert done.returncode == 0, done.stderr
    feature = ocx_git_import("feature", "--clone", bob.path, "--git", mirror.work)
    assert feature.returncode == 0, feature.stderr
    assert "(new branch feature)" in feature.stdout
    again = ocx_git_import("feature", "--clone", bob.path, "--git", mirror.work)
    assert again.returncode == 0 and "nothing to import" in again.stdout, again.stdout + again.stderr
    bob.push()
    with sqlite3.connect(f"file:{bob.path}?mode=ro", uri=True) as db:  # the private checkouts left no trace
        assert db.execute("SELECT name FROM config WHERE name GLOB 'ckout:*'").fetchall() == []

    made = [server_checkin(served, c) for c in ("bob changes a file and adds one\n\nwith a body",
                                                "bob deletes a file", "bob starts a feature")]
    with CloneLineage(served.path) as repository:
        checkins = [repository.checkin(h) for h in made]
        assert [c.branch for c in checkins] == ["trunk", "trunk", "feature"]
        assert checkins[1].parents[0] == made[0] and checkins[2].parents[0] == made[1]
        assert repository.files_of(made[2])["tool.sh"].executable
        assert abs(checkins[0].time - datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)).total_seconds() < 0.5
    for checkin in made:
        assert served.sender_by_sql(checkin)[0] == "bob"
        assert served.sql("SELECT user FROM event e JOIN blob b ON b.rid=e.objid WHERE b.uuid=?",
                          (checkin,)) == [("bob",)]
    assert server_files(served, made[0]) == {"keep.txt": b"kept\n", "change.txt": b"after\n",
                                             "gone.txt": b"to be deleted\n", "new/file.txt": b"new\n"}
    assert "gone.txt" not in server_files(served, made[1])
    assert server_files(served, made[2])["tool.sh"] == b"#!/bin/sh\necho hi\n"

    # Through the mirror and back: the exported commits (other git hashes) are known, nothing is made twice.
    mirror.export()
    mirror.git("fetch", "-q", "origin")
    mirror.git("checkout", "-q", "-B", "master", "origin/master")
    after_fetch = ocx_git_import("master", "--clone", bob.path, "--git", mirror.work)
    assert "nothing to import" in after_fetch.stdout, after_fetch.stdout + after_fetch.stderr


def test_a_merge_a_foreign_history_and_a_branch_that_moved_on_are_refused(served: Served, tmp_path: Path) -> None:
    mirror = Mirror(served, tmp_path)
    mirror.export()
    mirror.clone()
    erin = served.clone("erin")
    mirror.git("checkout", "-q", "-b", "side")
    mirror.commit("on the side", {"side.txt": "side\n"})
    mirror.git("checkout", "-q", "master")
    mirror.commit("on master", {"main.txt": "main\n"})
    mirror.git("merge", "-q", "--no-edit", "side")
    merged = ocx_git_import("master", "--clone", erin.path, "--git", mirror.work)
    assert merged.returncode == 1 and "is a merge" in merged.stderr, merged.stderr

    mirror.git("checkout", "-q", "--orphan", "foreign")
    mirror.commit("a history of its own", {"x.txt": "x\n"})
    foreign = ocx_git_import("foreign", "--clone", erin.path, "--git", mirror.work)
    assert foreign.returncode == 1 and "not based on the node's mirror" in foreign.stderr, foreign.stderr

    mirror.git("checkout", "-q", "-B", "master", "origin/master")
    mirror.commit("erin's change", {"erin.txt": "erin\n"})
    served.commit("alice", "meanwhile.txt", "trunk moved on\n")
    erin.pull()
    moved = ocx_git_import("master", "--clone", erin.path, "--git", mirror.work)
    assert moved.returncode == 1 and "moved on" in moved.stderr, moved.stderr

    missing = ocx_git_import("nosuch", "--clone", erin.path, "--git", mirror.work)
    assert missing.returncode == 1 and "'nosuch': no such branch" in missing.stderr, missing.stderr


def test_what_others_wrote_in_the_mirror_cannot_slip_in_leave_the_checkout_or_reach_the_terminal(
        served: Served, tmp_path: Path) -> None:
    mirror = Mirror(served, tmp_path)
    mirror.export()
    mirror.clone()
    bob = served.clone("bob")
    tip = served.sql("SELECT b.uuid FROM event e JOIN blob b ON b.rid=e.objid WHERE e.type='ci'"
                     " ORDER BY e.mtime DESC LIMIT 1")[0][0]

    # A commit claiming the tip's check-in with other files: its change would ride in unlisted.
    mirror.git("checkout", "-q", "-b", "forged")
    mirror.commit(f"looks exported\n\nFossilOrigin-Name: {tip}", {"keep.txt": "tampered\n"})
    mirror.commit("bob's honest change", {"honest.txt": "ok\n"})
    forged = ocx_git_import("forged", "--clone", bob.path, "--git", mirror.work, "--dry-run")
    assert forged.returncode == 1 and "its files are not that check-in's" in forged.stderr, forged.stderr

    # A tree naming `..`: refused while planning, before any file is written.
    blob = run_git(["hash-object", "-w", "--stdin"], home=mirror.home, cwd=mirror.work, input="escaped\n").stdout
    inner = run_git(["mktree"], home=mirror.home, cwd=mirror.work, input=f"100644 blob {blob.strip()}\tx\n").stdout
    master = mirror.git("rev-parse", "master").strip()
    listing = mirror.git("ls-tree", "master") + f"040000 tree {inner.strip()}\t..\n"
    tree = run_git(["mktree"], home=mirror.home, cwd=mirror.work, input=listing).stdout.strip()
    escaping = run_git(["commit-tree", tree, "-p", master, "-m", "escape"], home=mirror.home, cwd=mirror.work,
                       env=IDENTITY).stdout.strip()
    mirror.git("branch", "escaping", escaping)
    escaped = ocx_git_import("escaping", "--clone", bob.path, "--git", mirror.work)
    assert escaped.returncode == 1 and "'../x': not a name a checkout may hold" in escaped.stderr, escaped.stderr

    # A message holding a terminal's controls reaches it escaped (D41).
    mirror.git("checkout", "-q", "master")
    mirror.commit("\x1b]52;c;cHduZWQ=\x07\x1b[2J clipboard", {"t.txt": "t\n"})
    shown = ocx_git_import("master", "--clone", bob.path, "--git", mirror.work, "--dry-run")
    assert shown.returncode == 0 and "clipboard" in shown.stdout, shown.stderr
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    with CloneLineage(bob.path) as clone:
        assert clone.branch_size("escaping") == clone.branch_size("forged") == 0
