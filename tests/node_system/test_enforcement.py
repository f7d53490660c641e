"""Enforcement over a run's whole life, for `command` records too (D24), and D40 again at a delayed start.

In the systemd container, against the real Fossil server: an admin changes a
run user's letters through Fossil (`fossil user capabilities`, as the admin
page does), and the node must see it on its next pass (D26: the repository
file changed), end what runs, answer the record once, and never run a later
check-in as that user; a login made with letters before a record's first
run must be refused naming `user`, and left as it was (C5, D40).
"""
import secrets
import sqlite3
import time

import pytest

from ocx.node.record_dirs import RecordDir
from ocx.node.service.socket_served import socket_accepts, tool_socket_path
from ocx.protocol import Outcome

from .harness import systemctl, wait_for
from .test_command_runs import Developer, checkin_unit, ci_record, ci_verdicts, wait_open
from .test_cuts import waited

pytestmark = pytest.mark.systemd

PROMPTLY = 30.0  # seconds: a pass on the repository's change, its stop and its answer, on a busy 2-core machine


def never_ran(node, record: str, checkin: str) -> bool:
    unit = checkin_unit(node, record, checkin)
    marks = node.config.state_dir / "records" / record / f"starting-{unit.removesuffix('.service')}.json"
    return not marks.exists() and not systemctl("list-units", "--all", "--no-legend", unit).strip()


def user_row(node, login: str) -> tuple:
    """The login's row as Fossil keeps it: letters, password hash, last change."""
    with sqlite3.connect(f"file:{node.config.repository}?mode=ro", uri=True) as db:
        return db.execute("SELECT cap, pw, mtime FROM user WHERE login=?", (login,)).fetchone()


def test_a_running_ci_records_user_given_admin_is_answered_unenforced_once_and_runs_no_more(node):
    branch = f"enf-{secrets.token_hex(2)}"
    fields = ci_record(node, branch, budget={"wall": "5m"})
    record = node.post(fields)
    wait_open(node, record)
    developer = Developer(node, branch)
    since = time.time()
    hanging = developer.commit("hang")
    unit = checkin_unit(node, record, hanging)
    waited(node, record, since, lambda: systemctl("is-active", unit).strip() == "active", 90, "the check-in run active")
    assert sorted(node.capabilities(fields["user"])) == sorted("gior234")
    given_at = time.monotonic()
    node.login(fields["user"], "gior234a")  # an admin gives the run user admin, mid-run (D24)
    response = node.response(record, timeout=PROMPTLY)
    assert time.monotonic() - given_at < PROMPTLY
    assert response.outcome is Outcome.unenforced, response
    assert f"run user {fields['user']} was given admin or setup" in response.note, response.note
    wait_for(lambda: systemctl("is-active", unit).strip() in ("inactive", "failed", "unknown"), 60, 0.2,
             "the check-in run ended")
    later = developer.commit("pass")  # the next check-in on its branch
    node.barrier()  # the node reads receipts in order: the later check-in was read, and the node still answers
    assert never_ran(node, record, later), "a check-in ran as a user holding admin"
    assert not ci_verdicts(node, hanging) and not ci_verdicts(node, later)
    assert len(node.responses(record)) == 1  # exactly once


def test_a_ci_records_user_given_a_letter_between_check_ins_is_answered_unenforced(node):
    """No run is live: the record itself is open, and its next check-in would run as that user."""
    branch = f"enf-{secrets.token_hex(2)}"
    fields = ci_record(node, branch)
    record = node.post(fields)
    wait_open(node, record)
    developer = Developer(node, branch)
    since = time.time()
    first = developer.commit("pass")
    waited(node, record, since, lambda: ci_verdicts(node, first), 90, "the first check-in's verdict")
    node.login(fields["user"], "gior234x")  # private content: a letter beyond its run's (D19, D24)
    response = node.response(record, timeout=PROMPTLY)
    assert response.outcome is Outcome.unenforced and "'x' beyond its run's" in response.note, response
    later = developer.commit("pass")
    node.barrier()
    assert never_ran(node, record, later)
    assert node.capabilities(fields["user"]) == ""  # C5: the record gave it letters, and all are withdrawn


@pytest.mark.parametrize("network", [True, False])  # prepared in its unit, or by the node itself (D34)
def test_a_login_made_with_letters_before_a_records_first_run_is_refused_naming_user_and_left_as_it_is(node, network):
    """D40 again when the delayed start makes the user: admitted while the login did not exist, it was
    made with letters (by someone) before the record's first check-in came."""
    branch = f"d40-{secrets.token_hex(2)}"
    fields = ci_record(node, branch, sandbox={"network": network, "read_only": [], "read_write": []})
    record = node.post(fields)
    wait_open(node, record)
    node.login(fields["user"], "gio")  # someone makes the login, with letters of its own
    before = user_row(node, fields["user"])
    developer = Developer(node, branch)
    checkin = developer.commit("pass")
    response = node.response(record, timeout=90)
    assert response.outcome is Outcome.refused and response.note.startswith("user: "), response
    assert "D40" in response.note, response.note
    record_dir = node.config.state_dir / "records" / record
    wait_for(lambda: not record_dir.exists(), 60, 0.2, "the answered record's directory removed")
    assert user_row(node, fields["user"]) == before  # its letters and password as they were (C5 takes none)
    assert not ci_verdicts(node, checkin)
    node.barrier()  # the node answers the next record
    assert len(node.responses(record)) == 1


def test_a_no_password_ci_records_tool_socket_gone_while_a_check_in_runs_is_answered_unenforced(node):
    """C6: a `no_password` check-in run writes only through its record's tool socket (D22)."""
    branch = f"sock-{secrets.token_hex(2)}"
    record = node.post(ci_record(node, branch, restrict={"no_password": True}, budget={"wall": "5m"}))
    wait_open(node, record)
    record_dir = RecordDir.of(node.config, record)
    wait_for(lambda: socket_accepts(tool_socket_path(record_dir)), 30, 0.2, "its tool socket")
    developer = Developer(node, branch)
    since = time.time()
    hanging = developer.commit("hang")
    unit = checkin_unit(node, record, hanging)
    waited(node, record, since, lambda: systemctl("is-active", unit).strip() == "active", 90, "the check-in run active")
    tool_socket_path(record_dir).unlink()  # the tool service still runs, but nothing can reach the record's socket
    node.reply(record, "any request wakes the node (D26)")
    response = node.response(record, timeout=PROMPTLY + 10)  # its grace, GRACE_SECONDS, included
    assert response.outcome is Outcome.unenforced and "accepts no connection" in response.note, response
    later = developer.commit("pass")
    node.barrier()
    assert never_ran(node, record, later) and not ci_verdicts(node, later)
    assert len(node.responses(record)) == 1
