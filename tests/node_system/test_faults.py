"""Exactly one response through repeats, crashes and a Fossil server that is down (C3, D2, D5)."""
import subprocess
import time

import pytest

from ocx.node.record_dirs import RecordDir, node_lock
from ocx.protocol import Outcome

from .harness import journal, ocx, systemctl, wait_for

pytestmark = pytest.mark.systemd


def record_journal(record: str) -> str:
    return subprocess.run(["journalctl", "-o", "cat", f"OCX_RECORD={record}", "--no-pager"],
                          capture_output=True, text=True).stdout


def running(node, record: str) -> bool:
    return systemctl("is-active", node.unit(record)).strip() == "active"


def test_one_record_seen_by_every_trigger_gives_one_unit_and_one_response(node):
    record = node.post(node.record(objective="sleep 4"))
    wait_for(lambda: running(node, record), 30, what="the run")
    line = f"{record} forum-post {record[:14]}\n"
    for _ in range(2):  # Fossil's hook, twice, on the same artifact
        subprocess.run(["/opt/ocx/venv/bin/python", "-m", "ocx.cli.launch", "hook", node.config.repository],
                       input=line, text=True, check=True, timeout=30)
    (node.config.state_dir / "mark.json").unlink()  # D2: the mark is only a shortcut
    ocx("node", "check", node.name)
    systemctl("start", f"ocx-node@{node.name}.service")  # and the path unit's service, by hand
    response = node.response(record)
    assert response.outcome is Outcome.exited
    node.barrier()  # passes after the first answer wrote no second
    assert len(node.responses(record)) == 1
    starts = [l for l in subprocess.run(["journalctl", "-o", "cat", f"OCX_RECORD={record}", "--no-pager"],
                                        capture_output=True, text=True).stdout.splitlines() if l.startswith("started ")]
    assert len(starts) == 1, starts


def test_the_node_service_killed_while_a_run_lives(node):
    record = node.post(node.record(objective="sleep 5"))
    wait_for(lambda: running(node, record), 30, what="the run")
    systemctl("kill", "--signal=KILL", f"ocx-node@{node.name}.service")
    assert running(node, record)  # the run is systemd's, not the node's
    response = node.response(record, timeout=60)
    assert response.outcome is Outcome.exited and response.note.startswith("exit 0")


def test_the_fossil_server_down_when_a_run_ends(node):
    record = node.post(node.record(objective="sleep 3"))
    wait_for(lambda: running(node, record), 30, what="the run")
    systemctl("stop", f"ocx-fossil@{node.name}.service")
    try:
        wait_for(lambda: not running(node, record), 30, what="the run's end")
        wait_for(lambda: "a fault of the node's own" in record_journal(record), 60, what="the node's try to answer")
        assert node.responses(record) == []
    finally:
        systemctl("start", f"ocx-fossil@{node.name}.service")
    wait_for(lambda: node.responses(record), 60, what="the response once the server is back")
    node.barrier()
    answers = node.responses(record)
    assert len(answers) == 1 and answers[0][0].outcome is Outcome.exited
    assert "answer: a fault of the node's own" in record_journal(record)


def test_a_preparation_the_server_cut_off_is_tried_again_never_refused(node):
    """C4: the node's own fault (its server down while a run's home is cloned) is no reason to refuse.
    A run's clone is a copy of the node's (D16), which needs the server only to pull what came
    since: a check-in pushed just before the record, which neither the node nor the run can then pull."""
    clone = node.clone_of(node.admin)
    checkout = clone.open_checkout(node.home / f"cut-off-{time.time_ns()}")
    with node_lock(node.config):  # the run is prepared once the server is down
        (checkout / "before-the-record.txt").write_text("the run's clone needs this\n")
        clone.commit(checkout, "pushed just before the record")
        record = node.post(node.record(objective="exit 0"))
        systemctl("stop", f"ocx-fossil@{node.name}.service")
    try:
        wait_for(lambda: "prepare: a fault of the node's own" in record_journal(record), 60, 0.2,
                 "the preparation failing for want of the server")
        assert node.responses(record) == []
    finally:
        systemctl("start", f"ocx-fossil@{node.name}.service")
    response = node.response(record, timeout=90)
    assert response.outcome is Outcome.exited, response


def test_withdrawing_the_letters_of_a_user_never_made_is_done(node):
    """A stop before the preparation made the run user: the answer goes out, and no pass fails on it (C4)."""
    fields = node.record(objective="exit 0")
    tracebacks = journal(f"ocx-node@{node.name}.service").count("Traceback")
    with node_lock(node.config):  # read together: the stop is acted on before the run starts
        record = node.post(fields)
        node.stop(record)
    response = node.response(record)
    assert response.outcome is Outcome.stopped
    with node.repository() as repository:
        assert fields["user"] not in {u.login for u in repository.users()}
    assert journal(f"ocx-node@{node.name}.service").count("Traceback") == tracebacks


def record_journal(record: str) -> str:
    return subprocess.run(["journalctl", "-o", "cat", f"OCX_RECORD={record}"], capture_output=True, text=True).stdout


def test_a_unit_whose_stop_step_kept_nothing_is_answered_from_systemds_own_record(tmp_path):
    """D4, D6: the end is read from systemd while it still holds the unit (a failed run unit is kept
    until its record is answered, sessions.KEPT_WHEN_FAILED)."""
    import asyncio

    from ocx.node.run_end import decide_outcome, end_facts, end_from_systemd
    from ocx.node.states import Mark
    from ocx.protocol.messages import Budget
    from ocx.systemd.manager import Systemd

    stem = f"ocx-endtest-{int(time.time() * 1000) % 10**9}"
    subprocess.run(["systemd-run", f"--unit={stem}", "-p", "CollectMode=inactive", "/bin/sh", "-c", "exit 3"],
                   check=True, capture_output=True)
    wait_for(lambda: systemctl("is-failed", f"{stem}.service").strip() == "failed", 30, what="the unit failed")
    record_dir = RecordDir(tmp_path)
    record_dir.mark(Mark.STARTING, {"at": time.time()}, stem)
    record_dir.mark(Mark.STARTED, {"at": time.time()}, stem)
    record_dir.mark(Mark.PREPARED, {"at": time.time()}, stem)  # as the unit's preparation leaves it

    async def read() -> dict | None:
        async with await Systemd.connect() as systemd:
            return await end_from_systemd(systemd, record_dir, stem)
    try:
        ended = asyncio.run(read())
    finally:
        systemctl("reset-failed", f"{stem}.service")
    assert ended is not None and (ended["result"], ended["code"], ended["status"]) == ("exit-code", "exited", "3")
    assert record_dir.marked(Mark.ENDED, stem)["from"] == "systemd"
    outcome, note = decide_outcome(end_facts(ended, record_dir), Budget(wall="1m"))
    assert (outcome, note.split(" after")[0]) == (Outcome.exited, "exit 3")
