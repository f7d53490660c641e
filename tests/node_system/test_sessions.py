"""Session records on a real node: every outcome (C4), in the systemd container."""
import json
import re

import pytest

from ocx.protocol import Outcome

from .harness import journal, systemctl, wait_for

pytestmark = pytest.mark.systemd


def test_a_session_that_ends_by_itself_is_answered_exited(node):
    record = node.post(node.record(objective="exit 3"))
    response = node.response(record)
    assert response.outcome is Outcome.exited
    assert re.fullmatch(r"exit 3 after \d+ seconds?", response.note), response.note
    # C3: its first delivery, as D13 frames it, reached the program's standard input.
    line = next(l for l in journal(node.unit(record)).splitlines() if l.startswith("delivery "))
    first = json.loads(line.removeprefix("delivery "))
    assert first["delivery"] == "record" and first["hash"] == record
    assert first["text"] == f"Record {record}: exit 3"


def test_the_unit_is_named_and_described_as_d3_says(node):
    fields = node.record(objective="sleep")
    record = node.post(fields)
    unit = node.unit(record)
    wait_for(lambda: systemctl("is-active", unit).strip() == "active", 30, what=f"{unit} active")
    shown = systemctl("show", unit, "-p", "Description", "-p", "Slice", "-p", "DynamicUser")
    assert f"Description=OCX record {record} runner testrun as {fields['user']}" in shown
    assert "Slice=ocx.slice" in shown and "DynamicUser=yes" in shown
    assert unit in systemctl("list-units", "ocx-*", "--no-legend")
    node.stop(record)
    assert node.response(record).outcome is Outcome.stopped


def test_a_stop_from_an_admin_answers_stopped_naming_the_sender(node):
    record = node.post(node.record(objective="sleep"))
    wait_for(lambda: systemctl("is-active", node.unit(record)).strip() == "active", 30, what="the run")
    node.stop(record)
    response = node.response(record)
    assert response.outcome is Outcome.stopped and f"stopped by {node.admin.name}" in response.note


def test_wall_ends_the_run_as_budget(node):
    record = node.post(node.record(objective="sleep", budget={"wall": "3s"}))
    response = node.response(record, timeout=60)
    assert (response.outcome, response.note) == (Outcome.budget, "wall 3s reached")


def test_memory_is_told_apart_from_a_plain_kill(node):
    eater = node.post(node.record(objective="eat memory", budget={"wall": "1m", "memory": "64M"}))
    assert (node.response(eater).outcome, node.response(eater).note) == (Outcome.budget, "memory 64M reached")
    sleeper = node.post(node.record(objective="sleep", budget={"wall": "1m", "memory": "64M"}))
    unit = node.unit(sleeper)
    wait_for(lambda: systemctl("is-active", unit).strip() == "active", 30, what="the sleeper")
    systemctl("kill", "--signal=KILL", "--kill-who=all", unit)
    response = node.response(sleeper)
    # Not `budget`: a SIGKILL root had PID 1 send is root's end, and says so (docs/operating.md, 'An admin's round').
    assert response.outcome is Outcome.stopped and "(SIGKILL sent by machinectl kill or systemctl kill)" in response.note


def test_cpu_is_counted_for_all_processes_and_ends_the_run_as_budget(node):
    record = node.post(node.record(objective="burn cpu", budget={"wall": "1m", "cpu": 2}))
    response = node.response(record, timeout=60)
    assert (response.outcome, response.note) == (Outcome.budget, "cpu 2s reached")


def test_a_run_that_stops_its_own_processes_still_ends_at_its_cpu_budget(node):
    """D17: the feeder, the run's own process, once held this budget; every other
    process of the run stopped, a timer outside the run still ends it, well before its wall."""
    record = node.post(node.record(objective="stop the rest and burn cpu", budget={"wall": "3m", "cpu": 5}))
    unit = node.unit(record)

    def feeder_stopped() -> bool:
        pid = systemctl("show", unit, "-p", "MainPID", "--value").strip()
        try:
            with open(f"/proc/{pid}/status") as status:
                return pid != "0" and any(line.startswith("State:\tT") for line in status)
        except OSError:
            return False

    wait_for(feeder_stopped, 60, 0.05, what="the run's feeder stopped by its own program")
    response = node.response(record, timeout=150)
    assert (response.outcome, response.note) == (Outcome.budget, "cpu 5s reached")
    stem = unit.removesuffix(".service")
    # The watch outside the run read the cgroup and ended it (its journal: the record's directory is
    # removed once answered, node_service/cleanup.py).
    killed = [line for line in journal(f"{stem}-cpu-*.service").splitlines() if ": cpu_usec " in line]
    assert killed and int(killed[0].split()[2]) >= 5_000_000, killed


def test_a_run_user_given_admin_is_answered_unenforced(node):
    fields = node.record(objective="sleep")
    record = node.post(fields)
    wait_for(lambda: systemctl("is-active", node.unit(record)).strip() == "active", 30, what="the run")
    node.login(fields["user"], "a")  # an admin hands the run user admin, mid-run (D24)
    node.reply(record, "poke")  # any request to the server wakes the node (D26)
    response = node.response(record)
    assert response.outcome is Outcome.unenforced and "admin or setup" in response.note


def test_the_run_user_holds_exactly_d19_letters_while_it_runs_and_none_after(node):
    fields = node.record(objective="sleep")
    record = node.post(fields)
    wait_for(lambda: systemctl("is-active", node.unit(record)).strip() == "active", 30, what="the run")
    assert sorted(node.capabilities(fields["user"])) == sorted("gior234")
    node.stop(record)
    node.response(record)
    # C4: withdrawn after the response is written.
    wait_for(lambda: node.capabilities(fields["user"]) == "", 10, what="the letters withdrawn")
