"""`ocx node init` from nothing, on real systemd (in the test container).

One init per module (node `optest`, port 8181); each test looks at one
thing it promised. Nothing is replaced by a stand-in: the account, the
repository, the units and the Fossil server are the real ones.
"""
from __future__ import annotations

import hashlib
import json
import os
import pwd
import sqlite3
import stat
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.systemd

NAME = "optest"
PORT = 8181
OCX = ["/opt/ocx/venv/bin/python", "-m", "ocx.cli.launch"]
REPO = Path(f"/var/lib/ocx-fossil/{NAME}.fossil")


def sh(*argv: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, **kw)


def init() -> subprocess.CompletedProcess:
    return sh(*OCX, "node", "init", "--name", NAME, "--port", str(PORT))


def prop(unit: str, name: str) -> str:
    return sh("systemctl", "show", unit, "-p", name, "--value").stdout.strip()


def rows(sql: str) -> list[tuple]:
    db = sqlite3.connect(f"file:{REPO}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def snapshot() -> dict:
    """What a second init must leave exactly as it was."""
    files = [*Path("/etc/ocx").glob(f"{NAME}*"), *Path("/etc/systemd/system").rglob("ocx*")]
    return {
        "users": rows("SELECT uid, login, pw, cap, cookie, info, mtime FROM user ORDER BY uid"),
        "config": rows("SELECT name, value, mtime FROM config WHERE name NOT IN ('backoffice')"
                       " ORDER BY name"),
        "files": {str(p): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir",
                           p.lstat().st_mtime_ns, stat.S_IMODE(p.lstat().st_mode))
                  for p in sorted(files)},
    }


@pytest.fixture(scope="module")
def first():
    started = time.monotonic()
    done = init()
    return done, time.monotonic() - started


def test_init_from_nothing_succeeds(first):
    done, seconds = first
    assert "changed  new repository" in done.stdout, done.stdout
    assert f"http://127.0.0.1:{PORT}" in done.stdout
    print(f"init from nothing: {seconds:.2f} s")


def test_the_fossil_server_runs_as_its_own_account_not_root(first):
    unit = f"ocx-fossil@{NAME}.service"
    assert prop(unit, "ActiveState") == "active"
    pid = int(prop(unit, "MainPID"))
    uid = os.stat(f"/proc/{pid}").st_uid
    assert pwd.getpwuid(uid).pw_name == "fossil" and uid != 0
    assert REPO.stat().st_uid == uid  # the hook runs as the file's owner (D27)
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/", timeout=60) as reply:
        assert reply.status == 200


def test_the_node_user_holds_exactly_the_letters_chosen(first):
    from ocx.fossil.repository import Repository
    from ocx.setup.init import NODE_USER_CAPABILITIES

    with Repository(REPO) as repository:
        own = repository.user("ocx-node").capabilities
        assert sorted(own) == sorted(NODE_USER_CAPABILITIES)
        assert not set(own) & set("asp")  # D20: never admin, setup, password change
        assert not repository.holds_admin("ocx-node")


def test_the_after_receive_hook_is_registered(first):
    from ocx.fossil.program import run_fossil

    hooks = json.loads(rows("SELECT value FROM config WHERE name='hooks'")[0][0])
    command = "/usr/local/libexec/ocx-python -m ocx.cli.launch hook %R"  # the launcher (releases/serving.py)
    assert [h for h in hooks if h["type"] == "after-receive" and h["cmd"] == command]
    listed = run_fossil(["hook", "list", "-R", str(REPO)], home="/tmp/optest-home").stdout
    assert command in listed and "after-receive" in listed


def test_socket_and_path_units_are_active_and_everything_enabled(first):
    for unit in (f"ocx-node@{NAME}.socket", f"ocx-node@{NAME}.path", f"ocx-page@{NAME}.socket",
                 f"ocx-page@{NAME}.service"):
        assert prop(unit, "ActiveState") == "active", unit
    for unit in (f"ocx-fossil@{NAME}.service", f"ocx-node@{NAME}.socket",
                 f"ocx-node@{NAME}.path", f"ocx-check@{NAME}.service", f"ocx-page@{NAME}.socket",
                 f"ocx-page@{NAME}.service"):
        assert prop(unit, "UnitFileState") == "enabled", unit
    assert prop(f"ocx-node@{NAME}.path", "Paths") .find(str(REPO)) >= 0
    sock = Path(f"/run/ocx/{NAME}/node.sock")
    info = sock.stat()
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o660
    assert info.st_gid == pwd.getpwnam("fossil").pw_gid
    # The page's (D30): the Fossil server's account alone connects, and its service runs as that account.
    page = Path(f"/run/ocx/{NAME}/page.sock").stat()
    fossil = pwd.getpwnam("fossil")
    assert stat.S_ISSOCK(page.st_mode) and stat.S_IMODE(page.st_mode) == 0o600 and page.st_uid == fossil.pw_uid
    assert prop(f"ocx-page@{NAME}.service", "User") == "fossil"
    assert prop(f"ocx-page@{NAME}.service", "SupplementaryGroups") == "systemd-journal"


def test_config_and_password_files(first):
    from ocx.node.config import load

    config = load(NAME)
    assert (config.repository, config.url, config.node_user, config.server_account) == (
        str(REPO), f"http://127.0.0.1:{PORT}", "ocx-node", "fossil")
    for secret in (config.password_file, Path(f"/etc/ocx/{NAME}.admin-password")):
        info = secret.stat()
        assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == 0, secret
        assert len(secret.read_text().strip()) == 32


def test_the_passwords_work_and_the_node_user_posts_unmoderated(first):
    from ocx.fossil.repository import Repository
    from ocx.fossil.web import WebSession

    url = f"http://127.0.0.1:{PORT}"
    WebSession(url, "admin", Path(f"/etc/ocx/{NAME}.admin-password").read_text().strip())
    node = WebSession(url, "ocx-node", Path(f"/etc/ocx/{NAME}.node-password").read_text().strip())
    post = node.new_thread("init test", "posted as the node user")
    with Repository(REPO) as repository:
        assert repository.sender(post).login == "ocx-node"  # D20, D21
        assert not repository.is_private(post)  # letter 4: no moderation (D28)


def test_the_tools_web_page_is_served_and_only_root_can_change_it(first):
    from ocx.fossil.web import WebSession

    program = Path(f"/etc/ocx/ext/{NAME}/ocx")
    info = program.stat()
    assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o755  # the server's account runs it, never edits it
    url = f"http://127.0.0.1:{PORT}"
    page = WebSession(url, "admin", Path(f"/etc/ocx/{NAME}.admin-password").read_text().strip()).get("/ext/ocx")
    assert page.status == 200 and "data-title='OCX console'" in page.text and 'id="tool-create"' in page.text  # D30
    # it names its node (Fossil clears an ext program's environment), so it answers as the node,
    # and hands the request to the page's service (ocx-page@), which answered this one
    assert program.read_text().split()[-2:] == [f"/etc/ocx/{NAME}.json", f"/run/ocx/{NAME}/page.sock"]
    wait_status(f"ocx-page@{NAME}.service",
                lambda text: text.startswith("answered ") and not text.startswith("answered 0 "))
    assert f"node <b>{NAME}</b>" in page.text and "no node of this page here" not in page.text
    # D43: its forms' tokens are signed with a secret only root and the server's account read
    secret = Path(f"/etc/ocx/{NAME}.page-secret").stat()
    assert (secret.st_uid, secret.st_gid, stat.S_IMODE(secret.st_mode)) == (0, pwd.getpwnam("fossil").pw_gid, 0o640)
    assert 'name="token" value="' in page.text


def test_a_second_init_changes_nothing(first):
    before = snapshot()
    again = init()
    assert "changed" not in again.stdout.replace("nothing changed", ""), again.stdout
    assert snapshot() == before


def wait_status(unit: str, good, timeout: float = 30.0) -> str:
    """The unit's status line once GOOD holds for it (a service sends it as each request ends)."""
    deadline = time.monotonic() + timeout
    while not good(text := prop(unit, "StatusText")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert good(text), text
    return text


def wait_new_invocation(unit: str, before: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = prop(unit, "InvocationID")
        if now and now != before:
            return now
        time.sleep(0.1)
    raise AssertionError(f"{unit} was not started again within {timeout} s; journal:\n"
                         + sh("journalctl", "-u", unit, "-n", "30", "--no-pager", check=False).stdout)


def stopped(unit: str, seconds: float = 30.0) -> None:
    """The node's service stays up once started (serve.py): stopped here, so the next event must start it."""
    sh("systemctl", "stop", unit)
    deadline = time.monotonic() + seconds
    while prop(unit, "ActiveState") not in ("inactive", "failed") and time.monotonic() < deadline:
        time.sleep(0.1)


def test_a_web_request_starts_the_node_service_through_the_path_unit(first):
    unit = f"ocx-node@{NAME}.service"
    stopped(unit)
    before = prop(unit, "InvocationID")
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/timeline", timeout=60):
        pass
    wait_new_invocation(unit, before)
    journal = sh("journalctl", "-u", f"ocx-node@{NAME}.path", "-u", f"ocx-wake@{NAME}.service", "-u", unit,
                 "--no-pager", check=False).stdout
    assert "Started" in journal


def test_many_requests_do_not_stop_the_trigger(first):
    """StartLimitIntervalSec=0: without it, 5 starts in 10 s fail the path unit (D26)."""
    for _ in range(12):
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/", timeout=60):
            pass
        time.sleep(0.15)
    assert prop(f"ocx-node@{NAME}.path", "ActiveState") == "active"
    assert prop(f"ocx-node@{NAME}.path", "Result") == "success"


def test_the_hook_as_the_server_account_reaches_the_node_socket(first):
    """The socket is root:fossil 0660: the hook, as the server's account, connects.
    (While the node service fails at once, a poke left queued restarts it in a
    loop, so its InvocationID alone would not prove this connection.)"""
    unit = f"ocx-node@{NAME}.service"
    stopped(unit)
    before = prop(unit, "InvocationID")
    done = sh("runuser", "-u", "fossil", "--", *OCX, "hook", str(REPO), input="")
    assert done.stderr == "", done.stderr  # "not reachable" if the socket refused the account
    wait_new_invocation(unit, before)
    assert prop(f"ocx-node@{NAME}.socket", "ActiveState") == "active"

def test_init_adopts_an_existing_repository(first):
    from ocx.fossil import admin
    from ocx.node.config import load

    directory = Path("/var/lib/ocx-adopt")
    directory.mkdir(exist_ok=True)
    fossil = pwd.getpwnam("fossil")
    os.chown(directory, fossil.pw_uid, fossil.pw_gid)
    repository = directory / "mine.fossil"
    admin.new_repository(repository, "owner", home="/tmp/optest-home")
    done = sh(*OCX, "node", "init", "adopted", "--repository", str(repository), "--port", "8182", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(adopted)" in done.stdout and "new repository" not in done.stdout
    assert load("adopted").repository == str(repository)
    assert not Path("/etc/ocx/adopted.admin-password").exists()  # its admin is the owner's own
    assert prop("ocx-fossil@adopted.service", "ActiveState") == "active"
    assert repository.stat().st_uid == fossil.pw_uid
    refused = sh(*OCX, "node", "init", "adopted", "--port", "8183", check=False)
    assert refused.returncode == 1 and "port=8182" in refused.stderr


def test_the_new_node_answers_a_record_posted_through_the_web_page(first):
    """From nothing to a node that answers: here `refused`, naming `runner`,
    since no runner page exists yet on this new repository (D14)."""
    from ocx.fossil.repository import Repository
    from ocx.fossil.web import WebSession
    from ocx.protocol.finder import find_message

    admin_password = Path(f"/etc/ocx/{NAME}.admin-password").read_text().strip()
    with Repository(REPO) as repository:
        node = repository.server_code
        admin = repository.users()[0].login
    record = {"ocx": 1, "kind": "record", "node": node, "user": "run-first", "runner": "nosuch",
              "objective": "exit 0", "checkins": [], "hears": [], "remote": False, "restrict": {},
              "sandbox": {"network": True, "read_only": [], "read_write": []}, "budget": {"wall": "1m"}}
    posted = WebSession(f"http://127.0.0.1:{PORT}", admin, admin_password).new_thread(
        "First record", "```json\n" + json.dumps(record) + "\n```\n")
    deadline = time.monotonic() + 60
    answers = []
    while not answers and time.monotonic() < deadline:
        time.sleep(0.2)
        with Repository(REPO) as repository:
            answers = [(find_message(p.body), p.sender.login) for p in repository.thread(posted)
                       if p.hash != posted and find_message(p.body)]
    assert answers, "no response within 60 s"
    (message, sender), = answers
    assert sender == "ocx-node" and message["outcome"] == "refused" and message["note"].startswith("runner"), message
