"""`ocx attach` before and after the terminal (D32): the post's words (pure),
and the checks and the post against a real `fossil server`. The terminal
itself, in a real unit: tests/node_system/test_attach.py."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from ocx.protocol import find_message
from ocx.protocol.errors import FieldError
from ocx.cli.attach import (attach_session, attachment_text, check_caller, duration_text, find_session, only_node,
    post_attachment)

WALL = {"wall": "4h"}


@pytest.mark.parametrize("seconds,text", [(0, "0 s"), (0.4, "0 s"), (42.4, "42 s"), (59.6, "1 min 0 s"),
                                          (185, "3 min 5 s"), (7207, "2 h 0 min 7 s"), (-3, "0 s")])
def test_durations_are_whole_seconds_said_plainly(seconds, text):
    assert duration_text(seconds) == text


def test_the_post_names_who_when_in_utc_and_for_how_long():
    started = datetime(2026, 12, 3, 9, 12, 3, tzinfo=timezone(timedelta(hours=1)))
    assert attachment_text("alice", started, 42.2) == "alice attached to this session at 2026-12-03 08:12:03 UTC for 42 s."


def test_the_node_is_the_only_one_on_the_host_or_named(tmp_path):
    with pytest.raises(FieldError, match="none"):
        only_node(tmp_path)
    (tmp_path / "demo.json").write_text("{}")
    (tmp_path / "demo.node-password").write_text("x")
    assert only_node(tmp_path) == "demo"
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(FieldError, match="--at-node NAME .*demo, other"):
        only_node(tmp_path)


def test_only_admin_or_setup_with_the_right_password_may_attach(world):
    with world.caller("alice") as alice, pytest.raises(FieldError, match="alice may not attach: it needs admin or setup"):
        check_caller(alice)
    with world.caller("admin") as admin:
        admin.password = "not the password"
        with pytest.raises(FieldError, match="login as admin .* failed"):
            check_caller(admin)
    with world.caller("admin", password=False) as admin, pytest.raises(FieldError, match="no password"):
        check_caller(admin)
    with world.caller("admin") as admin:
        check_caller(admin)  # no exception: this one may


def created(world, **fields) -> str:
    answer = world.run("create", {"objective": "Look around.", "budget": WALL, **fields})
    assert answer.stopped is None, answer.stopped
    return answer.result


def test_the_session_is_found_by_its_units_name_d3(world):
    record = created(world)
    with world.caller("admin") as admin:
        session = find_session(admin, record[:10])
        code = admin.server_code()
    stem = f"ocx-{code[:12]}-{record[:12]}"
    assert session.unit == f"{stem}.service" and session.record.hash == record
    assert str(session.socket) == f"/run/ocx-runs/{stem}/terminal.sock"


def test_the_session_is_found_by_its_runs_machine_as_machinectl_lists_it(world):
    """D3, D32: `machinectl list` names a run `ocx-NODE12-RECORD12`, its unit's name; `ocx attach` takes it."""
    record = created(world)
    with world.caller("admin") as admin:
        code = admin.server_code()
        stem = f"ocx-{code[:12]}-{record[:12]}"
        assert find_session(admin, stem).record.hash == record
        assert find_session(admin, f"{stem}.service").record.hash == record
        with pytest.raises(FieldError, match=f"record: ocx-{'ab' * 6}-{record[:12]} is a run of node abababababab"):
            find_session(admin, f"ocx-{'ab' * 6}-{record[:12]}")
        with pytest.raises(FieldError, match="record: .* is a check-in run of a command record"):
            find_session(admin, f"{stem}-{'cd' * 6}")


def test_what_is_not_a_session_of_this_node_is_refused_naming_the_record(world):
    with world.caller("admin") as admin:
        with pytest.raises(FieldError, match="not 10 to 64"):
            find_session(admin, "xyz")
        with pytest.raises(FieldError, match="names no artifact"):
            find_session(admin, "0" * 12)
        with pytest.raises(FieldError, match="holding a record"):
            find_session(admin, world.thread)
        command = created(world, runner="command", command=["/bin/true"], checkins=["trunk"], hears=[])
        with pytest.raises(FieldError, match="command record"):
            find_session(admin, command)
        with world.served.repository() as repository:
            mine = find_message(repository.post(created(world)).body)
        elsewhere = admin.web().new_thread("Elsewhere", "```json\n" + json.dumps({**mine, "node": "ab" * 20}) + "\n```\n")
        with pytest.raises(FieldError, match="for node abab"):
            find_session(admin, elsewhere)


def test_a_session_that_is_not_running_is_refused_and_nothing_is_written(world):
    record = created(world)
    before = world.snapshot()
    said = []
    with world.caller("admin") as admin, pytest.raises(FieldError, match="no terminal at /run/ocx-runs/"):
        attach_session(admin, record, said.append)
    assert said == [] and world.snapshot() == before


def test_the_attachment_is_a_change_to_the_ticket_of_a_ticket_record_sent_by_the_caller_d12(world):
    ticket = world.served.web("admin").new_ticket("A session", "Its record follows.")
    record = created(world, ticket=ticket)
    with world.caller("admin") as admin:
        session = find_session(admin, record)
        written = post_attachment(admin, session, "admin attached to this session at 2026-12-03 08:12:03 UTC for 5 s.")
    with world.served.repository() as repository:
        change = repository.ticket_change(written)
    assert change.ticket == ticket and change.sender.login == "admin"
    assert "admin attached to this session at 2026-12-03 08:12:03 UTC for 5 s." in change.comment
