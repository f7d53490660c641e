"""Runs as machines of systemd-machined (D3, D32; ocx/node_service/machines.py), in the systemd container:
an admin's round on a node (docs/operating.md) done as an admin does it, with `machinectl` and
`ocx attach`, and what each leaves on the record read back from the repository; and a run that
attacks the machines from inside its unit."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from ocx.protocol import Outcome

from .harness import PYTHON, journal, systemctl, wait_for
from .test_attach import POSTED, Terminal, thread_posts
from .test_exposure import LIMITS, exposure

pytestmark = pytest.mark.systemd

ATTACK = "machineattack"
ATTACK_PROGRAM = str(Path(__file__).with_name("machine_attack.py"))
REFUSED = ("Access denied", "Transport endpoint is not connected")
ROOTS_STOP = "ended on the node by root (machinectl terminate, systemctl stop), not by a stop message"


def machinectl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["machinectl", "--no-pager", *args], capture_output=True, text=True, timeout=60)


def listed() -> set[str]:
    return {line.split()[0] for line in machinectl("list", "--no-legend").stdout.splitlines() if line.strip()}


def shown(name: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in machinectl("show", name).stdout.splitlines() if "=" in line)


def unit_shown(unit: str, *names: str) -> dict[str, str]:
    args = [arg for name in names for arg in ("-p", name)]
    return dict(line.split("=", 1) for line in systemctl("show", unit, *args).splitlines() if "=" in line)


class NamedTerminal(Terminal):
    """`ocx attach NAME` under a pseudo-terminal: NAME whole, a machine's, not a record's prefix."""

    def __init__(self, node, name: str, login: str, password: str):
        secret = node.home / f"{login}-{secrets.token_hex(3)}.password"
        secret.write_text(password + "\n")
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(
            [PYTHON, "-m", "ocx.cli.launch", "attach", name, "--at-node", node.name, "--login", login,
             "--password-file", str(secret)], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.seen = b""


def machine_of(node, record: str) -> tuple[str, str]:
    unit = node.unit(record)
    name = unit.removesuffix(".service")
    wait_for(lambda: name in listed(), 90, 0.1, f"machine {name} in `machinectl list`")
    return unit, name


def attack_runner(node) -> None:
    """The runner page whose program is machine_attack.py."""
    node.clone_of(node.admin).write_wiki(f"sandbox/{ATTACK}", f"# Runner {ATTACK} for tests\n\n```json\n"
                                         + json.dumps({"command": [PYTHON, ATTACK_PROGRAM], "homes": [], "env": {}})
                                         + "\n```\n")


def test_a_live_run_is_a_machine_from_its_programs_start_to_its_units_end(node):
    record_message = node.record(objective="echo", budget={"wall": "5m"})
    record = node.post(record_message)
    unit, name = machine_of(node, record)
    machine = shown(name)
    # Within a second of its program's start, on the same clock (CLOCK_MONOTONIC, microseconds).
    started = int(unit_shown(unit, "ExecMainStartTimestampMonotonic")["ExecMainStartTimestampMonotonic"])
    registered = int(machine["TimestampMonotonic"])
    print(f"\n{name} listed {(registered - started) / 1000:.1f} ms after its program's start")
    assert 0 <= registered - started < 1_000_000, (started, registered)
    assert (machine["Unit"], machine["Class"]) == (unit, "container")
    assert machine["Leader"] == unit_shown(unit, "MainPID")["MainPID"]  # the feeder, its unit's main process
    # The record, the runner and the user, where machined prints them; the unit's Description in full.
    assert machine["Service"] == f"OCX record {record[:12]} runner testrun as {record_message['user']}"
    assert unit_shown(unit, "Description")["Description"] == (
        f"OCX record {record} runner testrun as {record_message['user']}")
    status = machinectl("status", name).stdout
    assert unit in status and f"record {record[:12]}" in status, status
    # Listed, the run is as confined as before: its exposure score is within the sessions' limit.
    score, table = exposure(unit)
    assert score <= LIMITS[True], table

    # `ocx attach` takes the machine's name; the attachment is posted in the record's place as before (D32).
    wait_for(lambda: "delivery " in journal(unit), 60, 0.2, "the session's first delivery")
    by_name = NamedTerminal(node, name, node.admin.name, node.admin.password)
    by_name.read_until(b"attached to " + unit.encode())
    by_name.read_until(b"delivery {")  # relayed: its terminal is in raw mode now, so Ctrl-] is one key
    by_name.type(b"\x1d")
    assert by_name.finish() == 0, by_name.seen
    assert [p for p in thread_posts(node, record) if POSTED.search(p.body)], "no attachment posted"

    node.stop(record)
    response = node.response(record)
    assert response.outcome is Outcome.stopped and response.note.startswith("stopped by admin"), response
    wait_for(lambda: name not in listed(), 30, 0.1, f"machine {name} gone with its unit")


@pytest.mark.parametrize("command", [["terminate"], ["kill", "--signal=SIGTERM"]], ids=["terminate", "kill"])
def test_a_run_ended_with_machinectl_is_answered_once_and_never_lost(node, command):
    record = node.post(node.record(objective="sleep 600", budget={"wall": "10m"}))
    unit, name = machine_of(node, record)
    done = machinectl(*command, name)
    assert done.returncode == 0, done.stderr
    response = node.response(record, timeout=120)
    if command[0] == "terminate":  # a stop job the node did not queue: root's, which a run cannot queue
        assert response.outcome is Outcome.stopped and response.note.startswith(ROOTS_STOP), response
    else:  # a signal PID 1 sent as root asked: its own line in the journal says so, which a run cannot write
        assert response.outcome is Outcome.stopped and response.note.startswith(
            "ended on the node by root (SIGTERM sent by machinectl kill or systemctl kill), not by a stop message"), \
            response
    wait_for(lambda: name not in listed(), 30, 0.1, f"machine {name} gone with its unit")
    node.barrier()  # every later pass has looked: still one response, never a second (`lost`, say)
    assert len(node.responses(record)) == 1, node.responses(record)


def test_a_run_cannot_register_rename_terminate_or_kill_a_machine(node):
    attack_runner(node)
    other = node.post(node.record(objective="sleep 600", budget={"wall": "10m"}))
    other_unit, other_name = machine_of(node, other)
    attack_record = node.post(node.record(runner=ATTACK, objective=f"attack {other_name}",
                                          budget={"wall": "10m"}))
    unit, name = machine_of(node, attack_record)
    said = wait_for(lambda: [line for line in journal(unit).splitlines() if line.startswith("attack ")], 90, 0.2,
                    "the attack's report")
    attempts = json.loads(said[0].removeprefix("attack "))
    # Refused by the bus itself where the run's dynamic user is no user it knows (no libnss-systemd,
    # as in this image), else by machined and PID 1: root alone registers, ends or unregisters.
    assert all(attempt["code"] != 0 and any(why in attempt["said"] for why in REFUSED)
               for attempt in attempts.values()), attempts
    # The same calls by a user the bus knows, from a unit that is no run's: refused by machined and PID 1.
    plain = subprocess.run(["systemd-run", "--quiet", "--wait", "--pipe", "-p", "User=nobody", PYTHON, ATTACK_PROGRAM],
                           input=json.dumps({"objective": f"attack {other_name} {name}"}) + "\n",
                           capture_output=True, text=True, timeout=120)
    by_nobody = json.loads(plain.stdout.split("attack ", 1)[1])
    assert all(attempt["code"] != 0 and "Access denied" in attempt["said"] for attempt in by_nobody.values()), \
        by_nobody
    # Nothing it tried took: no machine of its own, its own and the other still listed, on their units.
    assert not {"ocx-evil", "ocx-evil2", f"{name}-renamed"} & listed()
    assert {name, other_name} <= listed()
    assert shown(name)["Unit"] == unit and shown(other_name)["Unit"] == other_unit
    assert systemctl("is-active", unit, other_unit).split() == ["active", "active"]
    for record in (attack_record, other):
        node.stop(record)
        assert node.response(record).outcome is Outcome.stopped


def test_a_run_that_forges_roots_kill_and_kills_itself_is_answered_as_killed_by_its_signal(node):
    """PID 1's line for a kill root asked for, written by the run (its output, the journal's socket, its
    unit's fields), then SIGTERM to itself: the journal's own _PID and _UID tell the forgery (D4)."""
    attack_runner(node)
    record = node.post(node.record(runner=ATTACK, objective="forge", budget={"wall": "10m"}))
    response = node.response(record, timeout=120)
    assert "forged " in journal(node.unit(record))  # it wrote its lines before it ended
    assert response.outcome is Outcome.exited and response.note.startswith("killed by SIGTERM"), response
