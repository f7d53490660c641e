"""No U card stops or bends the mirror's export (D49, D41), with the real `fossil server`,
`fossil git export` and `git`: a login with `i` pushes check-ins whose U card holds a line break
or a forged ` <owner@x> 1 +0000`; Fossil 2.21's own export stops at the first for good, and the
node's (git/fast_import_filter.py) exports every check-in, the forged ones with their author
sanitized and the others byte for byte as Fossil's own export writes them. An export whose
stream is not what the node knows fails, and the next one completes. A deleted file's name
holding a line break, which Fossil writes into the stream as it is, adds nothing to a commit."""
from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocx.fossil import admin, git_export
from ocx.fossil.fossil_failure import FossilError
from ocx.fossil.git_export import exported_commits, keep_copy
from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository
from ocx.git.fast_import_filter import FILTER_DIR, export, make_filter
from ocx.protocol.git_committer import StreamFacts, branch_ref
from ocx.protocol.git_mirror import author_addresses
from tests.fossil.conftest import start_served

pytestmark = pytest.mark.fossil

if shutil.which("git") is None:  # pragma: no cover - the image has it
    pytest.skip("git is not installed", allow_module_level=True)

BREAK = "eve\ncommitter x <y> 1 +0000"
FORGED = "eve <owner@example.org> 1 +0000"


def git(work: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=work, capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(work), "GIT_CONFIG_NOSYSTEM": "1"}).stdout


def committers(work: Path) -> dict[str, str]:
    """Each commit's subject -> its raw committer line (name, address, date as git holds them)."""
    shown = git(work, "log", "--all", "--format=%s%x00%cn <%ce> %ct")
    return dict(line.split("\x00") for line in shown.splitlines())


def addresses(served: Path) -> dict[str, str]:
    with Repository(served) as repository:
        return author_addresses(((user.login, user.contact) for user in repository.users()),
                                repository.checkin_authors())


def fossil_own_export(served: Path, target: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["fossil", "git", "export", str(target), "-R", str(served)], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(home)})


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    """A repository where `alice` (a login with `i`) pushed, among good check-ins, two forged U cards."""
    base = tmp_path_factory.mktemp("filter")
    served = start_served(base / "served", {"alice": "i", "owner": "i"})
    try:
        served.commit("owner", "first.txt", "genuine")
        served.commit("alice", "break.txt", "a", user_override=BREAK)
        served.commit("alice", "forged.txt", "b", user_override=FORGED)
        served.commit("alice", "after.txt", "c")
    finally:
        served.server.stop()
    return served


def test_fossils_own_export_stops_for_good_at_a_u_card_with_a_line_break(pushed, tmp_path):
    plain = fossil_own_export(pushed.path, tmp_path / "plain", pushed.home)
    assert "Missing < in ident string" in plain.stdout + plain.stderr  # the hole the filter closes
    assert "after.txt by alice" not in git(tmp_path / "plain", "log", "--all", "--format=%s")


def test_every_check_in_reaches_the_mirror_the_forged_ones_sanitized(pushed, tmp_path):
    home, state = tmp_path / "home", tmp_path / "state"
    keep_copy(pushed.path, state / "copy.fossil", home=home)
    export(state / "copy.fossil", state / "work", addresses(pushed.path), home=home)
    got = committers(state / "work")
    assert set(got) == {"initial empty check-in", "first.txt by owner", "break.txt by alice", "forged.txt by alice",
                        "after.txt by alice"}
    assert got["break.txt by alice"].startswith("eve_committer x _y_ 1 +0000 <> ")
    assert got["forged.txt by alice"].startswith("eve _owner@example.org_ 1 +0000 <> ")
    assert got["first.txt by owner"].startswith("owner <owner@example.org> ")
    assert got["after.txt by alice"].startswith("alice <alice@example.org> ")
    # Only the committer's own line is the node's: the date stays Fossil's.
    dates = {subject: int(line.rsplit(" ", 1)[1]) for subject, line in got.items()}
    assert dates["break.txt by alice"] <= dates["forged.txt by alice"] <= dates["after.txt by alice"]


def test_well_formed_check_ins_are_the_same_commits_as_fossils_own_export(tmp_path):
    served = start_served(tmp_path / "served", {"alice": "i"})
    try:
        served.commit("alice", "one.txt", "1")
        served.commit("alice", "two.txt", "2", user_override="Alice Liddell")
    finally:
        served.server.stop()
    home, state = tmp_path / "home", tmp_path / "state"
    keep_copy(served.path, state / "copy.fossil", home=home)
    git_export.export(state / "copy.fossil", tmp_path / "own", addresses(served.path), home=home)  # Fossil's git
    export(state / "copy.fossil", state / "work", addresses(served.path), home=home)
    assert exported_commits(state / "work") == exported_commits(tmp_path / "own")


def test_an_export_whose_stream_the_node_does_not_know_fails_and_the_next_completes(pushed, tmp_path):
    home, state = tmp_path / "home", tmp_path / "state"
    copy, work = state / "copy.fossil", state / "work"
    keep_copy(pushed.path, copy, home=home)
    told_nothing = lambda facts: make_filter(home / FILTER_DIR, StreamFacts())  # noqa: E731 - stale knowledge
    with pytest.raises(FossilError, match="fail closed"):
        git_export.export(copy, work, addresses(pushed.path), home=home, git_first=told_nothing)
    marks = sqlite3.connect(work / ".mirror_state" / "db")
    try:  # nothing of the refused export was kept (Fossil rolled back): its check-ins are still to be sent
        kept = marks.execute("SELECT name FROM sqlite_master WHERE name='mmark'").fetchall()
        assert not kept or marks.execute("SELECT count(*) FROM mmark WHERE isfile=0").fetchone() == (0,)
    finally:
        marks.close()
    export(copy, work, addresses(pushed.path), home=home)
    assert len(exported_commits(work)) == 5


def artifact(directory: Path, content: bytes) -> str:
    """CONTENT put in DIRECTORY as `fossil deconstruct` lays artifacts out; its hash."""
    name = hashlib.sha3_256(content).hexdigest()
    (directory / name[:2]).mkdir(exist_ok=True)
    (directory / name[:2] / name[2:]).write_bytes(content)
    return name


def manifest(*cards: str) -> bytes:
    body = "".join(card + "\n" for card in cards).encode()
    return body + b"Z " + hashlib.md5(body).hexdigest().encode() + b"\n"


def test_a_deleted_name_holding_a_line_break_forges_nothing_and_no_u_card_stops_nothing(tmp_path):
    """A check-in is any artifact a login with `i` pushes: its F card may name a file with a line
    break (Fossil checks only its slashes and dots), and Fossil's export writes the `D` line of its
    deletion as it is, so what follows the break is read by git as commands: here a file added to a
    commit nobody made. A manifest needs no U card at all. Made here as `fossil reconstruct` takes
    artifacts, as a sync would bring them."""
    home, repository, artifacts = tmp_path / "home", tmp_path / "start.fossil", tmp_path / "artifacts"
    admin.new_repository(repository, "admin", home=home)
    artifacts.mkdir()
    run_fossil(["deconstruct", "-R", str(repository), str(artifacts)], home=home, user="admin")
    with sqlite3.connect(repository) as db:
        (root,) = db.execute("SELECT uuid FROM blob JOIN event ON event.objid=blob.rid").fetchone()
    text = artifact(artifacts, b"x\n")
    evil = r"evil\nM\s100644\sinline\sforged.txt\ndata\s6\nforged"
    adds = artifact(artifacts, manifest("C adds", "D 2099-01-01T00:00:00.000", f"F a.txt {text}", f"F {evil} {text}",
                                        f"P {root}", "U eve"))
    deletes = artifact(artifacts, manifest("C deletes", "D 2099-01-02T00:00:00.000", f"F a.txt {text}", f"P {adds}",
                                           "U eve"))
    artifact(artifacts, manifest(r"C no\suser", "D 2099-01-03T00:00:00.000", f"F a.txt {text}", f"P {deletes}"))
    served = tmp_path / "served.fossil"
    run_fossil(["reconstruct", str(served), str(artifacts)], home=home, user="admin")

    plain = fossil_own_export(served, tmp_path / "plain", home)
    assert plain.returncode == 0, plain.stderr
    # Fossil's own: the file not deleted, and one added that no check-in holds.
    assert "forged.txt" in git(tmp_path / "plain", "ls-tree", "-r", "--name-only", "master~1")

    state = tmp_path / "state"
    keep_copy(served, state / "copy.fossil", home=home)
    export(state / "copy.fossil", state / "work", addresses(served), home=home)
    work = state / "work"
    assert committers(work)["no user"].startswith("(null) <@noemail.net> ")
    assert git(work, "ls-tree", "-r", "--name-only", "master~1") == "a.txt\n"  # the file deleted, nothing added
    assert len(exported_commits(work)) == 4


def test_a_branch_git_would_refuse_stops_nothing(tmp_path):
    """Fossil's export sanitizes a branch's name but leaves `.lock` and a leading '.', which git
    refuses as a ref, stopping the whole import at that branch's first check-in for good."""
    served = start_served(tmp_path / "served", {"alice": "i"})
    try:
        served.commit("alice", "lock.txt", "1", branch="x.lock")
        served.commit("alice", "dot.txt", "2", branch=".hidden")
        served.commit("alice", "after.txt", "3")
    finally:
        served.server.stop()
    plain = fossil_own_export(served.path, tmp_path / "plain", served.home)
    assert "doesn't conform to GIT standards" in plain.stdout + plain.stderr
    home, state = tmp_path / "home", tmp_path / "state"
    keep_copy(served.path, state / "copy.fossil", home=home)
    export(state / "copy.fossil", state / "work", addresses(served.path), home=home)
    branches = git(state / "work", "for-each-ref", "--format=%(refname:short) %(subject)", "refs/heads/")
    assert set(branches.splitlines()) >= {"x_lock lock.txt by alice", "_hidden dot.txt by alice",
                                          "master after.txt by alice"}
    assert len(exported_commits(state / "work")) == 4


# Fossil 2.21's gitmirror_sanitize_name (src/export.c): the bytes it keeps, every other one '_'.
FOSSIL_SAFE = set(b"!#%&()+,-./0123456789<=>ABCDEFGHIJKLMNOPQRSTUVWXYZ]_abcdefghijklmnopqrstuvwxyz{|}")


def fossil_sanitized(name: bytes) -> bytes:
    out = bytearray()
    for i, byte in enumerate(name):
        following = name[i + 1:i + 2]
        if byte > 0x7F or byte not in FOSSIL_SAFE:
            byte = ord("_")
        elif byte == ord("/") and (i == 0 or following in (b"", b"/")):
            byte = ord("_")
        elif byte == ord(".") and (following in (b"", b".") or (i > 0 and name[i - 1] == ord("."))):
            byte = ord("_")
        out.append(byte)
    return bytes(out)


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=1, max_size=24).filter(lambda b: b"\x00" not in b)
       | st.sampled_from([b"x.lock", b".hidden", b"a/.b", b"./x", b"a/b.lock/c", b"x/"]))
def test_every_branch_fossil_writes_is_one_git_takes(name):
    ref = b"refs/heads/" + branch_ref(fossil_sanitized(name))
    taken = subprocess.run(["git", "check-ref-format", ref], capture_output=True,
                           env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert taken.returncode == 0, ref
