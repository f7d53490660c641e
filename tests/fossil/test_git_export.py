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
    with Repository(repository) as served:
        addresses = author_addresses((user.login, user.contact) for user in served.users())
    keep_copy(repository, state / "copy.fossil", home=home)
    export(state / "copy.fossil", state / "work", addresses, home=home)
    return state / "work"


def test_no_contact_info_stops_the_export_or_lends_another_address(tmp_path):
    home, repository = tmp_path / "home", tmp_path / "served.fossil"
    admin.new_repository(repository, "admin", home=home)
    for login, contact in (("owner", "Owner <owner@example.org>"), ("poser", "owner@example.org"),
                           ("breaker", "breaker@example.org\nfatal"), ("plain", "plain@example.org")):
        admin.create_user(repository, login, "i", contact, home=home)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    run_fossil(["open", str(repository)], home=home, cwd=checkout, user="admin")
    for login in ("owner", "poser", "breaker", "plain"):
        commit(repository, checkout, home, login, f"by {login}")
    plain = subprocess.run(["fossil", "git", "export", str(tmp_path / "plain-export"), "-R", str(repository)],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(home)})
    assert "Missing > in ident" in plain.stdout + plain.stderr  # the hole: Fossil's own export stops
    before = hashlib.sha256(repository.read_bytes()).hexdigest()

    work = node_export(repository, tmp_path / "state", home)
    assert authors(work) == {"initial empty check-in": "admin <>", "by owner": "owner <>", "by poser": "poser <>",
                             "by breaker": "breaker <>", "by plain": "plain <plain@example.org>"}
    assert hashlib.sha256(repository.read_bytes()).hexdigest() == before  # only the copy was written


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
