"""A run's bytes never reach an admin's terminal as controls (D41): on a
real served repository, a login without admin checks in with a comment and a forged U card holding a title write (OSC 0), a screen
clear (CSI 2J), a clipboard write (OSC 52) and a bidirectional override, and
tags its check-in so; an admin's record holds them in its objective and the
node user's answer in its note. `ocx queue`, `ocx verdicts` and
`ocx activity` print every one of them visibly escaped, and none of their
bytes."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import PLAN, record_text
from .test_activity_repository import NODE_USER, response_text

pytestmark = pytest.mark.fossil

TITLE, CLEAR, CLIPBOARD, OVERRIDE = "\x1b]0;root@prod\x07", "\x1b[2J", "\x1b]52;c;cm0gLXJmIH4K\x07", "\u202e"
ATTACK = f"build{TITLE}{CLEAR}{CLIPBOARD}{OVERRIDE}exe.txt"
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\x9d", OVERRIDE, "\u2066")


def read(*argv: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "ocx.cli.launch", *argv], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def assert_terminal_safe(done: subprocess.CompletedProcess) -> str:
    text = done.stdout.decode("utf-8")
    for what in FORBIDDEN:
        assert what not in text and what not in done.stderr.decode("utf-8"), (what, text)
    assert "\\x1b]0;root@prod\\x07" in text  # shown, so the admin sees something was there
    return text


def test_the_readers_print_a_hostile_checkin_and_tag_escaped(fresh) -> None:
    served, node = fresh
    clone, checkout = served.clone("alice"), served.checkout("alice")
    clone.pull()
    (checkout / "f.txt").write_text("x\n")
    checkin = clone.commit(checkout, ATTACK, branch="dev", user_override=f"carol{TITLE}")
    clone.tag(checkin, "audited", f"pass: fine{OVERRIDE}{CLEAR} (against {PLAN})")  # a verdict's words (V1)
    served.clone("bob").tag(checkin, "ci", f"pass: {TITLE}{CLIPBOARD} (against {PLAN})")  # not a verdict: shown raw
    with served.repository() as repository:
        assert ATTACK in repository.checkin(checkin).comment  # Fossil kept the bytes: the reader must not print them

    queued = assert_terminal_safe(read("queue", "dev", "-R", str(served.path)))
    assert "\\x1b[2J" in queued and "\\u202eexe.txt" in queued
    judged = assert_terminal_safe(read("verdicts", checkin[:12], "-R", str(served.path)))
    assert "user carol\\x1b]0;root@prod\\x07" in judged and "\\x1b]52;c;" in judged
    exact = read("verdicts", checkin[:12], "-R", str(served.path), "--json")
    assert exact.stdout.isascii() and json.loads(exact.stdout)["comment"] == ATTACK  # exact, and still inert


def test_activity_prints_a_hostile_objective_and_note_escaped(fresh) -> None:
    served, node = fresh
    admin = served.web("admin")
    open_record = admin.new_thread("OCX record", record_text(node, ["dev"], ATTACK))
    answered = admin.new_thread("OCX record", record_text(node, ["dev"], "exit 0"))
    served.web(NODE_USER).reply(answered, response_text(node, answered, "exited", f"exit 0 {OVERRIDE}\u2066 ok"))

    shown = assert_terminal_safe(read("activity", "-R", str(served.path)))
    assert open_record[:12] in shown and "objective: build\\x1b]0;root@prod\\x07" in shown
    assert "exit 0 \\u202e\\u2066 ok" in shown
