"""The end of a run told in one place (ocx/node/run_end.py): systemd's account kept once as the ENDED mark,
by whichever hand comes first, then told as the run's outcome. No systemd: the stop step's report is
made by hand, as stoppost.collect makes it."""
import time

from ocx.node import run_end
from ocx.node.record_store import RecordStore
from ocx.node.states import Mark, RunState
from ocx.protocol import Outcome
from ocx.protocol.messages import Budget
from ocx.systemd.cgroup import MemoryEvidence
from ocx.systemd.stoppost import StopReport

STEM = "ocx-0123456789ab-ba9876543210"
NOW = time.time()  # ends of this boot: one from before it was cut off by its shutdown (D4)


def started(tmp_path) -> RecordStore:
    store = RecordStore(tmp_path)
    store.mark(Mark.RECORD, "{}\n")
    for mark in (Mark.STARTING, Mark.STARTED):
        store.mark(mark, {"at": NOW}, STEM)
    store.mark(Mark.PREPARED, {"at": NOW + 1}, STEM)
    return store


def test_the_stop_steps_account_is_kept_as_the_ended_mark_and_told_as_the_outcome(tmp_path):
    store = started(tmp_path)
    report = StopReport(result="signal", code="killed", status="9", control_group="/x", cpu_usec=5,
                        memory=MemoryEvidence(oom_kill=1))
    ended = run_end.by_stop_step(STEM, report, at=NOW + 4, system_stopping=False)
    assert set(ended) == {"unit", "at", "system_stopping", "job", "invocation", "result", "code", "status",
                          "control_group", "cpu_usec", "memory"}
    assert run_end.keep(store, STEM, ended) == ended and store.run_state(STEM) is RunState.ENDED
    kept = store.marked(Mark.ENDED, STEM)
    facts = run_end.end_facts(kept, store)
    assert facts.oom_killed and facts.seconds == 3.0 and not facts.cut_off
    assert run_end.decide_outcome(facts, Budget(wall="1m", memory="64M")) == (Outcome.budget, "memory 64M reached")


def test_an_end_kept_first_is_the_end(tmp_path):
    """The node gave up on a start, or read systemd's record, before the stop step came: its end stands."""
    store = started(tmp_path)
    first = run_end.never_started(STEM)
    run_end.keep(store, STEM, first)
    later = run_end.by_stop_step(STEM, StopReport("success", "exited", "0", None, None, None), NOW + 9, False)
    assert run_end.keep(store, STEM, later) == first
    assert store.marked(Mark.ENDED, STEM) == first


def test_a_run_cut_off_by_a_shutdown_gets_no_response_now(tmp_path):
    store = started(tmp_path)
    ended = run_end.by_stop_step(STEM, StopReport("signal", "killed", "15", None, None, None), NOW + 4, True)
    facts = run_end.end_facts(run_end.keep(store, STEM, ended), store)
    assert facts.cut_off and run_end.decide_outcome(facts, Budget(wall="1m")) is None
