"""The repository as git (D49): the real `git` client against the node's real
Fossil server at /ext/git, on the node `ocx node init` set up.

Clone and fetch as a login with Fossil's read right; a check-in reaches a
fetch without anything but its receipt; who may read is Fossil's (a login
without the right: 403; nobody logged in: 401, and anonymous reads only
while Fossil lets it); a push is refused in git's words; a verdict shows as
a note; a login's contact info can neither stop the export nor give its
check-ins another's address; no U card (a line break in it) can stop or
bend it; a fetch racing updates never sees a ref that is not a whole
commit; no run may name the mirror; a forge the configuration names gets
the mirror and its notes (D50).
"""
from __future__ import annotations

import json
import secrets
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ocx.fossil import admin
from ocx.git.program import run_git
from ocx.node import config as node_config
from ocx.node.host_paths import git_served_root
from ocx.protocol import Outcome
from ocx.protocol.verdict import Judgement, format_verdict
from tests.git.test_forges import Forge

from .harness import journal, wait_for

pytestmark = pytest.mark.systemd

UPDATE_SECONDS = 60.0  # a bound for a busy 2-core CI machine; bench/git.py measures the usual


def git(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_TERMINAL_PROMPT": "0", "LANG": "C.UTF-8",
           "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=cwd or "/", env=env, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args[:2])} exited {done.returncode}: {done.stderr}")
    return done


def url(node, login=None) -> str:
    base = node.url.removeprefix("http://")
    return f"http://{login.name}:{login.password}@{base}/ext/git" if login else f"http://{base}/ext/git"


class Developer:
    def __init__(self, node, contact: str | None = None):
        self.login = node.login(f"gd-{secrets.token_hex(2)}", "gio")
        if contact is not None:
            admin.set_contact(node.config.repository, self.login.name, contact, home=node.home)
        self.clone = node.clone_of(self.login)
        self.checkout = self.clone.open_checkout(node.home / f"gco-{secrets.token_hex(3)}")

    def commit(self, message: str) -> str:
        (self.checkout / "file.txt").write_text(secrets.token_hex(16))
        return self.clone.commit(self.checkout, message)


def fetched_subject(repo: Path, subject: str) -> str | None:
    """The commit whose message is SUBJECT after a fetch of every ref, or None."""
    git("fetch", "-q", "--prune", "origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/notes/*:refs/notes/*",
        cwd=repo)
    found = git("log", "--all", "--format=%H %s", cwd=repo).stdout.splitlines()
    return next((line.split(" ", 1)[0] for line in found if line.split(" ", 1)[1:] == [subject]), None)


@pytest.fixture(scope="module")
def reader(node):
    return node.login(f"gr-{secrets.token_hex(2)}", "o")


@pytest.fixture(scope="module")
def cloned(node, reader, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("git") / "clone"
    said: list[str] = []

    def listed() -> bool:
        done = git("ls-remote", url(node, reader), check=False)
        said[:] = [done.stderr]
        return done.returncode == 0 and "refs/heads/" in done.stdout

    try:
        wait_for(listed, UPDATE_SECONDS, 0.5, "the node's first mirror")
    except AssertionError as error:
        raise AssertionError(f"{error}: {said}") from None
    git("clone", "-q", url(node, reader), str(target))
    return target


def test_a_clone_holds_every_checkin_and_a_fetch_sees_a_new_one_after_its_receipt(node, cloned):
    with node.repository() as repository:
        fossil_count = repository._one("SELECT count(*) FROM event WHERE type='ci'")[0]
    developer = Developer(node)
    subject = f"for git {secrets.token_hex(4)}"
    began = time.monotonic()
    checkin = developer.commit(subject)
    commit = wait_for(lambda: fetched_subject(cloned, subject), UPDATE_SECONDS, 0.2, "the check-in in a fetch")
    print(f"check-in to fetch: {time.monotonic() - began:.2f} s")
    assert int(git("rev-list", "--all", "--count", cwd=cloned).stdout) >= fossil_count + 1
    shown = git("log", "-1", "--format=%an|%ae|%s", commit, cwd=cloned).stdout.strip()
    assert shown == f"{developer.login.name}||{subject}", shown  # no contact info: the login, no address
    assert checkin  # a check-in Fossil took


def test_who_may_read_is_fossils_to_say(node, tmp_path):
    # A new Fossil repository lets nobody read (`o` in nobody's letters): taken away here, then given back.
    saved = {who: node.capabilities(who) for who in ("nobody", "anonymous")}
    refused = node.login(f"gn-{secrets.token_hex(2)}", "h")
    try:
        for who, letters in saved.items():
            admin.set_capabilities(node.config.repository, who, letters.replace("o", ""), home=node.home)
        denied = git("clone", "-q", url(node, refused), str(tmp_path / "a"), check=False)
        assert denied.returncode != 0 and "403" in denied.stderr, denied.stderr
        anonymous = git("clone", "-q", url(node), str(tmp_path / "b"), check=False)
        assert anonymous.returncode != 0 and "Username" in anonymous.stderr, anonymous.stderr  # 401: log in
        assert not (tmp_path / "b" / ".git").exists()
        admin.set_capabilities(node.config.repository, "anonymous", saved["anonymous"].replace("o", "") + "o",
                               home=node.home)
        git("clone", "-q", url(node), str(tmp_path / "c"))  # anonymous reads where Fossil lets it
        assert int(git("rev-list", "--all", "--count", cwd=tmp_path / "c").stdout) > 0
    finally:
        for who, letters in saved.items():
            admin.set_capabilities(node.config.repository, who, letters, home=node.home)


def test_a_push_is_refused_saying_how_work_comes_back(node, cloned):
    (cloned / "pushed.txt").write_text("x")
    git("add", "pushed.txt", cwd=cloned)
    git("-c", "user.name=a", "-c", "user.email=a@example.org", "commit", "-qm", "push me", cwd=cloned)
    pushed = git("push", "origin", "HEAD:refs/heads/pushed", cwd=cloned, check=False)
    assert pushed.returncode != 0 and "ocx git import" in pushed.stderr, pushed.stderr


def test_a_verdict_shows_as_a_note(node, cloned):
    developer, reviewer = Developer(node), Developer(node)
    subject = f"to judge {secrets.token_hex(4)}"
    checkin = developer.commit(subject)
    reason = f"reads well {secrets.token_hex(3)}"
    reviewer.clone.tag(checkin, "audited", format_verdict(Judgement.passed, reason, "README.md"))
    reviewer.clone.push()

    def noted() -> str | None:
        commit = fetched_subject(cloned, subject)
        note = git("notes", "--ref=ocx", "show", commit, cwd=cloned, check=False).stdout if commit else ""
        return note if reason in note else None

    try:
        note = wait_for(noted, UPDATE_SECONDS, 0.3, "the verdict's note")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{journal(f'ocx-git-{node.name}.service')[-3000:]}\n"
                             f"{git('notes', '--ref=ocx', 'list', cwd=cloned, check=False)}") from None
    assert f"audited: pass by {reviewer.login.name} against README.md: {reason}" in note, note
    assert reviewer.login.name in git("log", "--notes=ocx", "-1", fetched_subject(cloned, subject), cwd=cloned).stdout


def test_no_login_can_stop_the_export_or_pose_as_another_author(node, cloned):
    owner = Developer(node, contact="Owner <owner@example.org>")
    poser = Developer(node, contact="owner@example.org")  # claims the same address
    breaker = Developer(node, contact="breaker@example.org\nfatal")  # a line break: Fossil's export would stop
    plain = Developer(node, contact="plain@example.org")
    subjects = {who: f"{name} {secrets.token_hex(3)}" for name, who in
                (("breaker", breaker), ("poser", poser), ("owner", owner), ("plain", plain))}
    for who, subject in subjects.items():
        who.commit(subject)
    wait_for(lambda: all(fetched_subject(cloned, s) for s in subjects.values()), UPDATE_SECONDS, 0.3,
             "every author's check-in in a fetch")

    def author(who) -> str:
        return git("log", "-1", "--format=%an <%ae>", fetched_subject(cloned, subjects[who]), cwd=cloned).stdout.strip()

    assert author(breaker) == f"{breaker.login.name} <>"
    assert author(poser) == f"{poser.login.name} <>"  # an address two logins claim is neither's
    assert author(owner) == f"{owner.login.name} <>"
    assert author(plain) == f"{plain.login.name} <plain@example.org>"



def test_a_checkin_naming_another_user_lends_it_no_address(node, cloned):
    """A U card is anyone's to write (D21): a check-in that names another login, or an address that
    is no login, is exported with that name and no address (Fossil's export would lend one)."""
    owner, forger = Developer(node, contact="owner@example.org"), Developer(node)
    victim = f"victim-{secrets.token_hex(2)}@example.org"
    subjects = {name: f"{name} {secrets.token_hex(3)}" for name in ("as owner", "as victim")}
    (forger.checkout / "file.txt").write_text(secrets.token_hex(16))
    forger.clone.commit(forger.checkout, subjects["as owner"], user_override=owner.login.name)
    (forger.checkout / "file.txt").write_text(secrets.token_hex(16))
    forger.clone.commit(forger.checkout, subjects["as victim"], user_override=victim)
    wait_for(lambda: all(fetched_subject(cloned, s) for s in subjects.values()), UPDATE_SECONDS, 0.3,
             "the forged check-ins in a fetch")
    shown = {name: git("log", "-1", "--format=%an <%ae>", fetched_subject(cloned, subject), cwd=cloned).stdout.strip()
             for name, subject in subjects.items()}
    assert shown == {"as owner": f"{owner.login.name} <>", "as victim": f"{victim} <>"}


def test_a_u_card_with_a_line_break_neither_stops_nor_bends_the_mirror(node, cloned):
    """Any login with `i` writes its check-ins' U card (D21): Fossil's export wrote it into the committer
    line as it is, so a line break stopped `git fast-import` at that check-in for good, and a forged
    ` <address> 1 +0000` bent the line. The node's filter writes both with '_' for what would end or bend
    it, and the check-ins after them reach a fetch too (git/fast_import_filter.py)."""
    forger = Developer(node)
    cards = {"broken": "eve\ncommitter x <y> 1 +0000", "forged": "eve <owner@example.org> 1 +0000"}
    subjects = {name: f"{name} {secrets.token_hex(3)}" for name in ("broken", "forged", "after")}
    for name, card in cards.items():
        (forger.checkout / "file.txt").write_text(secrets.token_hex(16))
        forger.clone.commit(forger.checkout, subjects[name], user_override=card)
    forger.commit(subjects["after"])
    wait_for(lambda: all(fetched_subject(cloned, s) for s in subjects.values()), UPDATE_SECONDS, 0.3,
             "the check-ins with forged U cards, and the one after them, in a fetch")
    shown = {name: git("log", "-1", "--format=%an <%ae>|%cn <%ce>", fetched_subject(cloned, subject),
                       cwd=cloned).stdout.strip() for name, subject in subjects.items()}
    assert shown == {"broken": "eve_committer x _y_ 1 +0000 <>|eve_committer x _y_ 1 +0000 <>",
                     "forged": "eve _owner@example.org_ 1 +0000 <>|eve _owner@example.org_ 1 +0000 <>",
                     "after": f"{forger.login.name} <>|{forger.login.name} <>"}

def test_a_fetch_racing_updates_sees_only_whole_commits(node, reader, tmp_path):
    developer = Developer(node)
    race = tmp_path / "race"
    git("clone", "-q", url(node, reader), str(race))
    subjects = [f"race {i} {secrets.token_hex(3)}" for i in range(5)]
    stop, seen = threading.Event(), threading.Event()
    problems: list[str] = []

    def fetch_all_the_time() -> None:
        deadline = time.monotonic() + UPDATE_SECONDS * 2
        while not stop.is_set() and time.monotonic() < deadline:
            done = git("fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*", cwd=race, check=False)
            checked = git("fsck", "--connectivity-only", "--no-dangling", cwd=race, check=False)
            problems.extend(run.stderr for run in (done, checked) if run.returncode != 0)
            if subjects[-1] in git("log", "--all", "--format=%s", cwd=race).stdout:
                seen.set()
                return

    fetcher = threading.Thread(target=fetch_all_the_time)
    fetcher.start()
    try:
        for subject in subjects:
            developer.commit(subject)
        assert seen.wait(UPDATE_SECONDS * 2), "the last commit never reached a fetch"
    finally:
        stop.set()
        fetcher.join(120)
    assert not problems, problems[:3]
    got = set(git("log", "--all", "--format=%s", cwd=race).stdout.splitlines())
    assert set(subjects) <= got


def test_no_run_may_name_the_served_mirror_in_its_sandbox(node, cloned):
    served = git_served_root(node.name)
    sandbox = {"network": True, "read_only": [], "read_write": [served + "/repository.git"]}
    response = node.response(node.post(node.record(sandbox=sandbox)))
    assert response.outcome is Outcome.refused
    assert response.note.startswith("sandbox.read_write[0]:"), response.note
    assert Path(served) in node.config.own_paths()  # so every run's unit has it inaccessible (run_units.py)


def test_the_mirror_and_its_notes_reach_a_forge_after_an_update(node, tmp_path):
    """D50 through the node: a forge named in the configuration (a bare repository behind git's own
    http-backend needing a password, tests/git/test_forges.py's) gets the branches and the notes."""
    root = tmp_path / "forge"
    run_git(["init", "-q", "--bare", str(root / "mirror.git")], home=tmp_path / "home")
    forge = Forge(root, "mirror-bot", secrets.token_hex(16))
    forge.start()
    config_file = node_config.config_path(node.name)
    saved = config_file.read_text()
    credentials = node.config.git_credentials_file
    try:
        credentials.write_text(f"http://{forge.login}:{forge.password}@127.0.0.1:{forge.server.server_address[1]}\n")
        credentials.chmod(0o600)
        config_file.write_text(json.dumps({**json.loads(saved), "git_forges": [forge.url]}))
        developer, reviewer = Developer(node), Developer(node)
        subject = f"to the forge {secrets.token_hex(3)}"
        checkin = developer.commit(subject)
        reviewer.clone.tag(checkin, "audited", format_verdict(Judgement.passed, "fine", "README.md"))

        def arrived() -> bool:
            log = git("log", "--all", "--format=%s", cwd=root / "mirror.git", check=False).stdout
            notes = git("notes", "--ref=ocx", "list", cwd=root / "mirror.git", check=False).stdout
            return subject in log and bool(notes.strip())

        wait_for(arrived, UPDATE_SECONDS, 0.3, "the check-in and its note on the forge")
        assert forge.admitted and not forge.seen_holding  # the password in no command line or environment
    finally:
        config_file.write_text(saved)
        credentials.unlink(missing_ok=True)
        forge.stop()
