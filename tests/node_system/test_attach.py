"""`ocx attach` in the systemd container (C3, D32): a person at a real
terminal (a pty this test holds) joins a live session's terminal, types to
it, detaches, and the post it leaves is read back with its sender."""
import os
import re
import secrets
import select
import signal
import subprocess
import time

import pytest

from ocx.protocol import Outcome

from .harness import PYTHON, journal, systemctl, wait_for

pytestmark = pytest.mark.systemd

POSTED = re.compile(r"(\S+) attached to this session at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC for (\d+) s\.")


class Terminal:
    """`ocx attach` run under a pseudo-terminal, as a person runs it."""

    def __init__(self, node, record: str, login: str, password: str):
        secret = node.home / f"{login}-{secrets.token_hex(3)}.password"
        secret.write_text(password + "\n")
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(
            [PYTHON, "-m", "ocx.cli.launch", "attach", record[:12], "--at-node", node.name, "--login", login,
             "--password-file", str(secret)], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.seen = b""

    def read_until(self, wanted: bytes, timeout: float = 60) -> bytes:
        deadline = time.monotonic() + timeout
        while wanted not in self.seen:
            ready, _, _ = select.select([self.master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise AssertionError(f"no {wanted!r} in {timeout} s; the terminal shows {self.seen!r}")
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the program ended and closed the terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"ended before {wanted!r}; the terminal showed {self.seen!r}")
            self.seen += chunk
        return self.seen

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def finish(self, timeout: float = 60) -> int:
        code = self.process.wait(timeout)
        try:
            while chunk := os.read(self.master, 65536):
                self.seen += chunk
        except OSError:
            pass
        os.close(self.master)
        return code


def thread_posts(node, record: str) -> list:
    with node.repository() as repository:
        return [p for p in repository.thread(record) if p.hash != record]


@pytest.fixture
def session(node):
    record = node.post(node.record(objective="echo", budget={"wall": "5m"}))
    unit = node.unit(record)
    wait_for(lambda: "delivery " in journal(unit), 60, 0.2, "the session's first delivery")
    yield record
    node.stop(record)
    assert node.response(record).outcome is Outcome.stopped


def test_an_admin_attaches_types_detaches_and_the_attachment_is_posted_as_the_admin(node, session):
    record, unit = session, node.unit(session)
    terminal = Terminal(node, record, node.admin.name, node.admin.password)
    terminal.read_until(b"detach with Ctrl-]")
    terminal.read_until(b"delivery {")  # what the session printed before: its first delivery
    terminal.type(b"hello from the terminal\r")
    terminal.read_until(b"typed hello from the terminal\r\n")  # the program read the line and answered
    time.sleep(1.2)
    terminal.type(b"\x1d")
    assert terminal.finish() == 0, terminal.seen
    assert b"posted " in terminal.seen

    posts = [p for p in thread_posts(node, record) if POSTED.search(p.body)]
    assert len(posts) == 1, [p.body for p in thread_posts(node, record)]
    post = posts[0]
    who, seconds = POSTED.search(post.body).groups()
    assert who == node.admin.name and post.sender.login == node.admin.name  # rcvfrom, not a U card (D21)
    assert post.in_reply_to == record and post.root == record  # the record's place (D12)
    assert 1 <= int(seconds) <= 120

    # A hang-up (the person's connection drops) ends an attachment too, and it is posted all the same.
    dropped = Terminal(node, record, node.admin.name, node.admin.password)
    dropped.read_until(b"detach with Ctrl-]")
    dropped.process.send_signal(signal.SIGHUP)
    assert dropped.finish() == 0, dropped.seen
    assert len([p for p in thread_posts(node, record) if POSTED.search(p.body)]) == 2

    # The session goes on: still active, still given what it hears.
    assert systemctl("is-active", unit).strip() == "active"
    node.reply(record, "after the attachment")
    wait_for(lambda: "after the attachment" in journal(unit), 60, 0.2, "a delivery after the attachment")
    # What the session printed under its terminal is in its unit's journal, as plain lines.
    assert "typed hello from the terminal" in journal(unit).splitlines()


def test_a_caller_without_admin_or_setup_or_its_password_is_refused_and_leaves_no_post(node, session):
    plain = node.login(f"plain-{secrets.token_hex(2)}", "gio234")
    before = [p.hash for p in thread_posts(node, session)]
    refused = Terminal(node, session, plain.name, plain.password)
    assert refused.finish() == 1
    assert f"refused: caller: {plain.name} may not attach: it needs admin or setup".encode() in refused.seen
    wrong = Terminal(node, session, node.admin.name, "not-the-password")
    assert wrong.finish() == 1
    assert b"refused: caller: login as admin" in wrong.seen and b"attached to" not in wrong.seen
    assert [p.hash for p in thread_posts(node, session)] == before
