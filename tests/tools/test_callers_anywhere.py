"""Callers as people have them (D22): a clone made with
`fossil clone --save-http-password`, used with `ocx TOOL --clone FILE` as
the README shows, is answered by the node itself (its server-code, what it
enforces, the caller's letters on the node, who holds admin now, whether a
record is answered), never by the clone; a password is taken from the clone
while it still holds one, else from a file or a terminal (never echoed),
else the answer says what to give; nothing of a call stays on disk.
Against a real `fossil server` running the node's page (conftest.py)."""
from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from ocx.fossil import admin
from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone

from .test_ways_in import ocx_path

ENFORCED = ["branch", "no_password", "own_thread"]


def person_clone(world, login: str, name: str) -> Path:
    """What a person types: fossil clone --save-http-password URL FILE (sync.py)."""
    home = world.served.work / f"home-{name}"
    return CallerClone.create(world.served.work / f"{name}.fossil", world.served.base_url, login,
                              world.served.passwords[login], home=home, save_password=True).path


def ocx(*args: str, cwd: Path | None = None, home: Path | None = None) -> dict:
    env = {"PATH": os.environ["PATH"], "HOME": str(home or "/nonexistent"), "LANG": "C.UTF-8"}
    done = subprocess.run([ocx_path(), *args, "--json"], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env=env, stdin=subprocess.DEVNULL)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def server_code(path: Path) -> str:
    with Repository(path) as repository:
        return repository.server_code


def test_a_fresh_clone_alone_is_answered_by_the_node(world):
    clone = person_clone(world, "bob", "bob-fresh")
    answer = ocx("status", "--clone", str(clone))
    assert answer["stopped"] is None, answer
    status = answer["result"]
    assert status["node"] == server_code(world.served.path) != server_code(clone)  # C1: never the clone's own
    assert status["on_node"] is True and status["enforces"] == ENFORCED and status["cpu_rate"] == 1.0
    with world.served.repository() as served:
        letters = "".join(sorted(served.effective_capabilities("bob")))
    assert (status["login"], status["capabilities"], status["repository"]) == ("bob", letters, world.served.base_url)


def test_after_its_first_sync_a_clone_needs_the_password_and_says_so(world, tmp_path):
    clone = person_clone(world, "bob", "bob-synced")
    CallerClone(clone, "bob", world.served.work / "home-bob-synced").pull()  # Fossil now keeps the sync secret
    refused = ocx("status", "--clone", str(clone))
    assert refused["stopped"]["field"] == "caller", refused
    why = refused["stopped"]["why"]
    assert "--password-file" in why and "terminal" in why and "sync secret" in why
    given = ocx("status", "--clone", str(clone), "--password-file", str(world.password_file("bob")))
    assert given["stopped"] is None and given["result"]["login"] == "bob"


def test_on_a_terminal_a_missing_password_is_asked_for_and_never_echoed(world):
    clone = person_clone(world, "bob", "bob-terminal")
    CallerClone(clone, "bob", world.served.work / "home-bob-terminal").pull()
    password = world.served.passwords["bob"]
    pid, terminal = pty.fork()
    if pid == 0:  # the person's shell, on a terminal
        os.execve(ocx_path(), [ocx_path(), "status", "--clone", str(clone), "--json"],
                  {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "LANG": "C.UTF-8"})
    seen, answered = b"", False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([terminal], [], [], 1)
        if not ready:
            continue
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # the program ended: the terminal is gone
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"password" in seen.lower():
            os.write(terminal, password.encode() + b"\n")
            answered = True
    os.waitpid(pid, 0)
    text = seen.decode(errors="replace")
    assert answered, text
    assert password not in text  # never echoed
    answer = json.loads(text[text.index("{"):])
    assert answer["stopped"] is None and answer["result"]["login"] == "bob", answer


def test_url_and_login_need_no_repository_file(world, tmp_path):
    answer = ocx("status", "--url", world.served.base_url, "--login", "alice", "--password-file",
                 str(world.password_file("alice")), cwd=tmp_path)
    assert answer["stopped"] is None and answer["result"]["node"] == server_code(world.served.path)
    assert list(tmp_path.iterdir()) == []


def _scratch() -> set[str]:
    return {name for name in os.listdir("/tmp") if name.startswith("ocx-")}


def test_nothing_of_a_call_is_left_on_disk(world, tmp_path):
    clone = person_clone(world, "bob", "bob-disk")
    home = tmp_path / "home"
    home.mkdir()
    before = (_scratch(), clone.read_bytes(), sorted(os.listdir(clone.parent)))
    audit = ocx("audit", "--clone", str(clone), "--checkin", world.checkin[:12], "--verdict", "pass",
                "--reason", "read it", "--against", "a.txt", home=home)
    assert audit["stopped"] is None, audit
    assert world.served.sender_by_sql(audit["result"])[0] == "bob"  # D21, by sync in bob's session
    assert (_scratch(), clone.read_bytes(), sorted(os.listdir(clone.parent))) == before
    assert list(home.iterdir()) == []  # no ~/.fossil, no scratch clone


@pytest.fixture(scope="module")
def node_user(world):
    """The node's own login on the served repository (D20), to answer records."""
    password = admin.create_user(world.served.path, world.node.node_user, "24cgir", "node", home=world.served.home)
    return password


def test_create_and_stop_from_a_clone_are_decided_on_the_node(world, node_user):
    bob, admin_clone = person_clone(world, "bob", "bob-admin-test"), person_clone(world, "admin", "admin-fresh")
    bob_pw, admin_pw = str(world.password_file("bob")), str(world.password_file("admin"))
    before = world.snapshot()
    # A clone names its own user setup: only the node can say bob holds neither admin nor setup.
    for tool, args in (("create", ["--objective", "o", "--budget", '{"wall": "1h"}']),
                       ("stop", ["--record", world.thread[:12]])):
        refused = ocx(tool, "--clone", str(bob), "--password-file", bob_pw, *args)
        assert refused["stopped"]["field"] == "caller" and "admin or setup" in refused["stopped"]["why"], refused
    assert world.snapshot() == before
    # hears: every admin or setup user NOW on the node, one made after the clone included
    admin.create_user(world.served.path, "zed", "s", "zed", home=world.served.home)
    created = ocx("create", "--clone", str(admin_clone), "--password-file", admin_pw, "--objective", "o",
                  "--budget", '{"wall": "1s"}', "--no-remote")
    assert created["stopped"] is None, created
    record = created["result"]
    with world.served.repository() as served:
        from ocx.protocol import find_message
        written = find_message(served.post(record).body)
        assert served.sender(record).login == "admin"
    assert written["node"] == server_code(world.served.path) and written["hears"] == ["admin", "zed"]
    # once the node answered it, no one answers it again, lost or not (C4)
    from ocx.fossil.web import WebSession
    response = {"ocx": 1, "kind": "response", "node": written["node"], "answers": record, "outcome": "exited",
                "note": "exit 0"}
    WebSession(world.served.base_url, world.node.node_user, node_user).reply(
        record, "```json\n" + json.dumps(response) + "\n```\n")
    before = world.snapshot()
    for extra in ([], ["--lost"]):
        again = ocx("stop", "--clone", str(admin_clone), "--password-file", admin_pw, "--record", record, *extra)
        assert again["stopped"]["field"] == "record" and "already answered exited" in again["stopped"]["why"], again
    assert world.snapshot() == before
