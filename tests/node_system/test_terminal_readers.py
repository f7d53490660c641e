"""A run's bytes on an admin's terminal (D41), acted out on the real node in
the systemd container: a login without admin checks in on a CI record's
branch with a comment holding a title write (OSC 0), a screen clear, a
clipboard write (OSC 52) and a bidirectional override; the CI run it starts
prints an override as its last line, which the node's own `ci` verdict
carries as its reason; the record's objective holds the same. Read as root
with `ocx queue`, `ocx verdicts` and `ocx activity`, not one of those bytes
reaches the terminal, each is shown escaped, and the node answers the next
record."""
import json
import secrets
import subprocess

import pytest

from .harness import PYTHON, wait_for
from .test_command_runs import Developer, ci_record, ci_verdicts, wait_open

pytestmark = pytest.mark.systemd

TITLE, CLEAR, CLIPBOARD, OVERRIDE = "\x1b]0;root@prod\x07", "\x1b[2J", "\x1b]52;c;cm0gLXJmIH4K\x07", "\u202e"
ATTACK = f"fix{TITLE}{CLEAR}{CLIPBOARD}{OVERRIDE}exe.txt"
FORBIDDEN = [b"\x1b", b"\x07", OVERRIDE.encode(), b"\xc2\x9b"]
# The CI program: its last line (V1's reason) holds an override and an escape (the node makes the escape a space).
SHOUTING_CI = f'print("all passed {OVERRIDE}txt.exe {CLEAR}")\n'


def read_as_root(*argv: str) -> bytes:
    done = subprocess.run([PYTHON, "-m", "ocx.cli.launch", *argv], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for forbidden in FORBIDDEN:
        assert forbidden not in done.stdout and forbidden not in done.stderr, (argv, forbidden, done.stdout)
    return done.stdout


def test_the_readers_never_write_a_runs_bytes_to_an_admins_terminal(node) -> None:
    branch = f"term-{secrets.token_hex(2)}"
    record = node.post(ci_record(node, branch, objective=f"CI{TITLE}{OVERRIDE}", budget={"wall": "1m"}))
    wait_open(node, record)
    developer = Developer(node, branch)
    (developer.checkout / "ci.py").write_text(SHOUTING_CI)
    (developer.checkout / "mode.txt").write_text("pass\n")
    checkin = developer.clone.commit(developer.checkout, ATTACK, branch=branch)
    wait_for(lambda: ci_verdicts(node, checkin), 90, 0.2, "the node's ci verdict on the hostile check-in")
    (verdict,) = ci_verdicts(node, checkin)
    assert OVERRIDE in verdict.value  # the run's override is in the node's own tag: the reader must not print it

    queued = read_as_root("queue", branch, "--at-node", node.name).decode()
    assert "\\x1b]0;root@prod\\x07" in queued and "\\u202etxt.exe" in queued
    judged = read_as_root("verdicts", checkin[:12], "--at-node", node.name).decode()
    assert "\\u202etxt.exe" in judged
    active = read_as_root("activity", "--at-node", node.name).decode()
    assert "objective: CI\\x1b]0;root@prod\\x07\\u202e" in active
    exact = json.loads(read_as_root("queue", branch, "--at-node", node.name, "--json"))
    assert exact["checkins"][0]["comment"] == ATTACK  # exact with --json, and still inert (JSON escapes)

    node.stop(record)
    assert node.response(record).outcome.value == "stopped"
    following = node.post(node.record(objective="exit 0"))
    assert node.response(following, timeout=90).outcome.value == "exited"  # the node answers the next record
