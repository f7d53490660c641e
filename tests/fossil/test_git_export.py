"""The node's git export (fossil/git_export.py, D49) with the real `fossil` and
`git`: a login whose contact info holds a line break stops Fossil 2.21's own
`fossil git export`, and not the node's, which exports from its copy with
authors it wrote; a check-in that arrives dated before the newest exported
still reaches the mirror; the served repository is never written."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from ocx.fossil import admin
from ocx.fossil.git_export import export, exported_commits, keep_copy, leaves
from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository
from ocx.protocol.git_mirror import author_addresses
from tests.fossil.conftest import start_served

pytestmark = pytest.mark.fossil

if shutil.which("git") is None:  # pragma: no cover - the image has it
    pytest.skip("git is not installed", allow_module_level=True)


def commit(repository: Path, checkout: Path, home: Path, login: str, message: str, *extra: str) -> None:
    file = checkout / "file.txt"  # a line more each time: Fossil sees a change of size within one second
    file.write_text((file.read_text() if file.exists() else "") + message + "\n")
    run_fossil(["addremove"], home=home, cwd=checkout, user=login)
    run_fossil(["commit", "-m", message, "--no-warnings", "--user-override", login, *extra], home=home, cwd=checkout,
               user=login)


def authors(work: Path) -> dict[str, str]:
    out = subprocess.run(["git", "log", "--all", "--format=%s|%an <%ae>"], cwd=work, capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin", "HOME": str(work), "GIT_CONFIG_NOSYSTEM": "1"})
    return dict(line.split("|", 1) for line in out.stdout.splitlines())


def node_export(repository: Path, state: Path, home: Path) -> Path:
    """The export as node_service/git_update.py makes it: authors by the logins' contact info and by
    who sent each check-in."""
    with Repository(repository) as served:
        addresses = author_addresses(((user.login, user.contact) for user in served.users()),
                                     served.checkin_authors())
    keep_copy(repository, state / "copy.fossil", home=home)
    export(state / "copy.fossil", state / "work", addresses, home=home)
    return state / "work"


def test_no_contact_info_stops_the_export_or_lends_another_address(tmp_path):
    contacts = {"owner": "Owner <owner@example.org>", "poser": "owner@example.org",
                "breaker": "breaker@example.org\nfatal", "plain": "plain@example.org"}
    served = start_served(tmp_path / "served", {login: "i" for login in contacts})
    try:
        for login, contact in contacts.items():
            admin.set_contact(served.path, login, contact, home=served.home)
        for login in contacts:
            served.commit(login, f"{login}.txt", login)  # pushed by sync as LOGIN: its sender (D21)
        plain = subprocess.run(["fossil", "git", "export", str(tmp_path / "plain-export"), "-R", str(served.path)],
                               capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(served.home)})
        assert "Missing > in ident" in plain.stdout + plain.stderr  # the hole: Fossil's own export stops
        before = hashlib.sha256(served.path.read_bytes()).hexdigest()

        work = node_export(served.path, tmp_path / "state", served.home)
        assert authors(work) == {"initial empty check-in": "admin <>", "owner.txt by owner": "owner <>",
                                 "poser.txt by poser": "poser <>", "breaker.txt by breaker": "breaker <>",
                                 "plain.txt by plain": "plain <plain@example.org>"}
        assert hashlib.sha256(served.path.read_bytes()).hexdigest() == before  # only the copy was written
    finally:
        served.server.stop()


def test_a_check_in_naming_another_user_lends_it_no_address(tmp_path):
    """A U card is anyone's to write (D21): Fossil's export would give a check-in naming another login
    that login's address, and one naming an address that is no login that address."""
    served = start_served(tmp_path / "served", {"owner": "i", "poser": "i"})
    try:
        admin.set_contact(served.path, "poser", "poser@example.org", home=served.home)
        served.commit("owner", "owner.txt", "genuine")
        served.commit("poser", "poser.txt", "own")
        served.commit("poser", "a.txt", "forged", user_override="owner")
        served.commit("poser", "b.txt", "forged", user_override="victim@example.org")
        plain = tmp_path / "plain-export"
        subprocess.run(["fossil", "git", "export", str(plain), "-R", str(served.path)], capture_output=True,
                       check=True, env={"PATH": "/usr/bin:/bin", "HOME": str(served.home)})
        assert authors(plain)["b.txt by poser"] == "victim@example.org <victim@example.org>"  # Fossil's own
        assert authors(plain)["a.txt by poser"] == "owner <owner@example.org>"

        got = authors(node_export(served.path, tmp_path / "state", served.home))
        assert got["a.txt by poser"] == "owner <>" and got["owner.txt by owner"] == "owner <>"
        assert got["b.txt by poser"] == "victim@example.org <>"
        assert got["poser.txt by poser"] == "poser <poser@example.org>"
    finally:
        served.server.stop()


def test_a_checkin_dated_before_the_newest_still_reaches_the_mirror(tmp_path):
    home, repository = tmp_path / "home", tmp_path / "served.fossil"
    admin.new_repository(repository, "admin", home=home)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    run_fossil(["open", str(repository)], home=home, cwd=checkout, user="admin")
    commit(repository, checkout, home, "admin", "today")
    state = tmp_path / "state"
    node_export(repository, state, home)
    commit(repository, checkout, home, "admin", "dated last year", "--date-override", "2020-01-01T00:00:00",
           "--allow-older")
    work = node_export(repository, state, home)
    commits = exported_commits(work)
    shown = subprocess.run(["git", "log", "--no-walk", "--format=%s", *commits.values()], cwd=work, text=True,
                           capture_output=True, check=True, env={"PATH": "/usr/bin:/bin", "HOME": str(work)}).stdout
    assert "dated last year" in shown.splitlines()
    assert set(leaves(state / "copy.fossil")) <= set(commits)  # every leaf has its commit, for its branch ref
    # A pull after the copy's passwords and cookies were emptied (authors_script): it needs none of them.
    with Repository(state / "copy.fossil") as copy, Repository(repository) as served:
        assert copy._one("SELECT count(*) FROM user WHERE pw!='' OR cookie IS NOT NULL") == (0,)
        assert served._one("SELECT count(*) FROM user WHERE pw!=''")[0] > 0


def test_the_first_copy_is_of_one_commit_and_leaves_writers_be(tmp_path) -> None:
    """Fossil clones a file by copying its bytes with no lock, so a commit being written could be half
    in the copy; the first copy is cloned from a snapshot (Repository.copy_to, D49) instead: a write
    transaction open meanwhile is neither waited for nor in the copy, and commits after it."""
    import sqlite3

    served, home = tmp_path / "served.fossil", tmp_path / "home"
    admin.new_repository(served, "boss", home=home)
    writer = sqlite3.connect(str(served), timeout=0.1)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO config(name, value, mtime) VALUES('ocx-test-uncommitted', 'x', 0)")
        keep_copy(served, tmp_path / "state" / "copy.fossil", home=home)
        writer.commit()  # the snapshot's read lock was held only while it copied
    finally:
        writer.close()
    copy = sqlite3.connect(f"file:{tmp_path / 'state' / 'copy.fossil'}?mode=ro", uri=True)
    try:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert copy.execute("SELECT count(*) FROM config WHERE name='ocx-test-uncommitted'").fetchone() == (0,)
        assert copy.execute("SELECT count(*) FROM event WHERE type='ci'").fetchone() == (1,)
    finally:
        copy.close()
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == ["copy.fossil"]  # no snapshot left
