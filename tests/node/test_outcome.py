"""The response a run's end gets (C4 order, D4, D17): pure, no systemd."""
import pytest

from ocx.node.run_end import EndFacts, decide_outcome
from ocx.protocol import Outcome
from ocx.protocol.messages import Budget

BUDGET = Budget(wall="2h", cpu=60, memory="64M")


def outcome(**facts):
    return decide_outcome(EndFacts(**{"result": "success", "code": "exited", "status": "0", **facts}), BUDGET)


def test_a_program_that_ends_by_itself_exited_with_its_code_and_duration():
    assert outcome(seconds=52.2) == (Outcome.exited, "exit 0 after 52 seconds")
    assert outcome(result="exit-code", status="3", seconds=1) == (Outcome.exited, "exit 3 after 1 second")


def test_stopped_comes_before_every_other_cause():
    assert outcome(stopped_by="pat", stop_hash="ab" * 20, result="timeout")[0] is Outcome.stopped
    assert "stopped by pat" in outcome(stopped_by="pat", code="killed", status="TERM")[1]


@pytest.mark.parametrize("facts,note", [
    ({"result": "timeout", "code": "killed", "status": "TERM"}, "wall 2h reached"),
    ({"result": "oom-kill", "code": "killed", "status": "KILL"}, "memory 64M reached"),
    ({"result": "signal", "code": "killed", "status": "9", "oom_killed": True}, "memory 64M reached"),
    ({"result": "success", "code": "killed", "status": "TERM", "cpu_budget_hit": True}, "cpu 1m reached"),
])
def test_budget_names_the_limit(facts, note):
    assert outcome(**facts) == (Outcome.budget, note)


def test_a_plain_kill_is_not_a_memory_budget():
    assert outcome(result="signal", code="killed", status="9") == (Outcome.exited, "killed by SIGKILL after 0 seconds")


def test_unenforced_names_what_the_node_could_not_hold():
    found = outcome(code="killed", status="TERM", unenforced="run user claude-1 was given admin")
    assert found[0] is Outcome.unenforced and "given admin" in found[1]


def test_a_shutdown_writes_no_response_d4():
    assert outcome(code="killed", status="TERM", system_stopping=True) is None


def test_a_missing_program_says_so():
    assert "could not be started" in outcome(result="exit-code", status="203")[1]


def test_a_run_whose_workspace_was_never_made_is_refused_with_the_reason():
    outcome_, note = outcome(result="exit-code", status="1", unprepared="FossilError: clone failed")
    assert outcome_ is Outcome.refused
    assert note == "the node could not prepare its workspace: FossilError: clone failed"


def test_a_stop_during_preparation_is_still_stopped():
    assert outcome(stopped_by="pat", unprepared="its preparation did not finish")[0] is Outcome.stopped


def test_a_shutdown_during_preparation_waits_for_lost():
    assert outcome(system_stopping=True, unprepared="its preparation did not finish") is None


def test_a_host_oom_kill_of_a_run_with_no_memory_budget_is_not_budget():
    """C4: no limit of the record was reached, so the outcome says what happened instead."""
    no_memory = Budget(wall="2h")
    for facts in ({"result": "oom-kill", "code": "killed", "status": "KILL"},
                  {"result": "signal", "code": "killed", "status": "9", "oom_killed": True}):
        found = decide_outcome(EndFacts(**{"seconds": 3, **facts}), no_memory)
        assert found == (Outcome.exited, "killed by SIGKILL (out of memory on the host) after 3 seconds")


def test_roots_stop_on_the_node_is_stopped_and_says_it_was_no_stop_message():
    """A stop job the node did not queue (machinectl terminate, systemctl stop): `stopped`, once, never `lost`."""
    found = outcome(code="killed", status="TERM", ended_on_node=True, seconds=7)
    assert found == (Outcome.stopped, "ended on the node by root (machinectl terminate, systemctl stop), "
                                      "not by a stop message, after 7 seconds")
    assert "stopped by pat" in outcome(stopped_by="pat", ended_on_node=True)[1]  # the node's own stop names its sender
    assert outcome(system_stopping=True, ended_on_node=True) is None  # a shutdown's stop jobs: D4's lost


def test_a_stop_job_is_roots_only_when_the_node_left_no_reason_of_its_own(tmp_path):
    import time

    from ocx.node.record_dirs import RecordDir
    from ocx.node.states import Mark
    from ocx.node.run_end import end_facts

    stem = "ocx-aaaaaaaaaaaa-bbbbbbbbbbbb"
    record_dir = RecordDir(tmp_path)
    ended = {"unit": f"{stem}.service", "at": time.time(), "result": "success", "code": "killed", "status": "TERM"}
    assert not end_facts(ended, record_dir).ended_on_node  # no job: the program ended, or was signalled
    assert end_facts({**ended, "job": "stop"}, record_dir).ended_on_node
    assert not end_facts({**ended, "job": "start"}, record_dir).ended_on_node
    record_dir.mark(Mark.RECORD, {"at": time.time()})
    record_dir.mark(Mark.UNENFORCED, {"why": "run user x was given admin"})  # the node stops it for D24
    assert not end_facts({**ended, "job": "stop"}, record_dir).ended_on_node


def test_a_signal_root_asked_pid_1_to_send_is_stopped_unless_the_cpu_watch_sent_it():
    found = outcome(code="killed", status="TERM", signalled_on_node="SIGTERM", seconds=3)
    assert found == (Outcome.stopped, "ended on the node by root (SIGTERM sent by machinectl kill or systemctl kill), "
                                      "not by a stop message, after 3 seconds")
    assert outcome(code="killed", status="KILL", signalled_on_node="SIGKILL", cpu_budget_hit=True)[0] is Outcome.budget
