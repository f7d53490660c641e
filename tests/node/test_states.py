"""A record's life in one table (states.py), its marks as files (record_store.py): no node, no systemd.

The table is the whole of what may happen; a change outside it raises
StateError and writes nothing. Property: any sequence of changes, made
through the one writer, leaves the files saying exactly what the table
predicts, whatever order the node, a preparation and a stop step wrote them in.
"""
import pytest
from hypothesis import given, settings, strategies as st

from ocx.node.record_store import FAILURES, RecordStore
from ocx.node.states import (MAX_ATTEMPTS, RECORD_CHANGES, RECORD_MARKS, RESET, RUN_CHANGES, RUN_MARKS, Failure,
                             Mark, RecordState as S, RunState as R, StateError, acting, after_record, after_run,
                             record_state, run_state)

STEM = "ocx-0123456789ab-ba9876543210"


def test_every_state_has_its_row_and_every_change_leads_to_a_state():
    assert set(RECORD_CHANGES) == set(S) and set(RUN_CHANGES) == set(R)
    for changes in RECORD_CHANGES.values():
        assert set(changes) <= set(RECORD_MARKS) and set(changes.values()) <= set(S)
    for changes in RUN_CHANGES.values():
        assert set(changes) <= {*RUN_MARKS, RESET} and set(changes.values()) <= set(R)


def test_an_answer_once_decided_or_written_is_final():
    assert RECORD_CHANGES[S.ANSWERED] == {}
    assert set(RECORD_CHANGES[S.ANSWERING]) == {Mark.ANSWERED}  # never decided twice, never stopped
    with pytest.raises(StateError, match="answered cannot take 'stop'"):
        after_record(S.ANSWERED, Mark.STOP)
    with pytest.raises(StateError):
        after_record(S.ANSWERING, Mark.ANSWERING)
    assert not acting(S.ANSWERING) and not acting(S.ANSWERED) and acting(S.STOPPING)


def test_a_run_is_started_only_from_nothing_and_runs_again_only_by_a_reset():
    with pytest.raises(StateError):
        after_run(R.STARTING, Mark.STARTING)  # asked again only after a reset (D5)
    assert after_run(after_run(R.STARTING, RESET), Mark.STARTING) is R.STARTING
    with pytest.raises(StateError):
        after_run(R.JUDGED, RESET)  # a judged check-in never runs again
    with pytest.raises(StateError):
        after_run(R.NONE, Mark.ENDED)  # an end of a run never asked for is a bug


def test_marks_from_three_writers_may_come_in_any_order_the_table_allows(tmp_path):
    RecordStore(tmp_path).mark(Mark.STARTING, {"at": 1}, STEM)  # the node
    RecordStore(tmp_path).mark(Mark.PREPARED, {"at": 2}, STEM)  # the unit's preparation
    RecordStore(tmp_path).mark(Mark.ENDED, {"at": 3}, STEM)  # the unit's stop step
    RecordStore(tmp_path).mark(Mark.STARTED, {"at": 4}, STEM)  # the node, once systemd's reply came: late
    assert RecordStore(tmp_path).run_state(STEM) is R.ENDED
    assert RecordStore(tmp_path).marked(Mark.STARTED, STEM) == {"at": 4}


def test_a_change_outside_the_table_raises_and_writes_nothing(tmp_path):
    RecordStore(tmp_path).mark(Mark.RECORD, "{}\n")
    RecordStore(tmp_path).mark(Mark.ANSWERING, {"outcome": "exited"})
    RecordStore(tmp_path).mark(Mark.ANSWERED, {})
    with pytest.raises(StateError):
        RecordStore(tmp_path).mark(Mark.STOP, {"by": "admin"})
    assert not (tmp_path / "stop.json").exists()
    assert RecordStore(tmp_path).state is S.ANSWERED
    with pytest.raises(StateError):
        RecordStore(tmp_path).mark(Mark.ENDED, {}, STEM)
    with pytest.raises(ValueError):
        RecordStore(tmp_path).mark(Mark.ENDED, {})  # a run's mark names its run


def test_a_reset_removes_every_mark_of_that_run_and_no_other(tmp_path):
    other = STEM + "-aaaaaaaaaaaa"
    for stem in (STEM, other):
        RecordStore(tmp_path).mark(Mark.STARTING, {}, stem)
        RecordStore(tmp_path).mark(Mark.STARTED, {}, stem)
    RecordStore(tmp_path).reset(STEM)
    assert RecordStore(tmp_path).run_state(STEM) is R.NONE
    assert RecordStore(tmp_path).run_state(other) is R.STARTED


RECORD_STEPS = st.sampled_from(RECORD_MARKS)
RUN_STEPS = st.tuples(st.sampled_from([*RUN_MARKS, RESET]), st.sampled_from([STEM, STEM + "-cccccccccccc"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(RECORD_STEPS, RUN_STEPS), max_size=14))
def test_the_files_always_say_what_the_table_predicts(tmp_path_factory, steps):
    store = RecordStore(tmp_path_factory.mktemp("record"))
    own, runs = S.NEW, {}
    for step in steps:
        if isinstance(step, tuple):
            change, stem = step
            try:
                expected = after_run(runs.get(stem, R.NONE), change)
            except StateError:
                expected = None
            try:
                store.reset(stem) if change == RESET else store.mark(change, {}, stem)
            except StateError:
                assert expected is None
                continue
            assert expected is not None
            runs[stem] = expected
        else:
            try:
                expected = after_record(own, step)
            except StateError:
                expected = None
            try:
                store.mark(step, "{}\n" if step is Mark.RECORD else {})
            except StateError:
                assert expected is None
                continue
            own = expected
        assert store.state is own
        for stem, state in runs.items():
            assert store.run_state(stem) is state


def test_states_are_read_from_the_marks_present():
    assert record_state(frozenset()) is S.NEW
    assert record_state(frozenset({Mark.RECORD, Mark.STOP})) is S.STOPPING
    assert record_state(frozenset({Mark.RECORD, Mark.STOP, Mark.ANSWERING})) is S.ANSWERING
    assert run_state(frozenset({Mark.STARTING, Mark.UNPREPARED, Mark.ENDED})) is R.ENDED


def test_a_fault_of_the_nodes_own_is_waited_out_within_the_wall_anything_else_a_few_times():
    fault = Failure("start", 40, first=100.0, error="cannot connect", fault=True, last=100.0)
    assert not fault.gives_up(now=150.0, received=90.0, wall_seconds=20)  # at least a minute after it first came
    assert fault.gives_up(now=161.0, received=90.0, wall_seconds=20)
    assert not fault.gives_up(now=500.0, received=90.0, wall_seconds=600)  # within the record's wall
    other = Failure("start", MAX_ATTEMPTS - 1, first=100.0, error="bug", fault=False, last=100.0)
    assert not other.gives_up(now=10**9, received=0.0, wall_seconds=0)
    assert Failure("start", MAX_ATTEMPTS, 100.0, "bug", False, 100.0).gives_up(now=100.0, received=0, wall_seconds=0)


def test_tries_come_later_and_later_up_to_ten_seconds():
    waits = [Failure("s", n, 0.0, "", True, 0.0).retry_in() for n in range(1, 9)]
    assert waits == [1, 2, 4, 8, 10, 10, 10, 10]
    failure = Failure("s", 3, 0.0, "", True, last=10.0)
    assert not failure.due(13.9) and failure.due(14.0) and failure.wait(12.0) == 2.0


def test_failures_are_counted_in_the_records_directory(tmp_path):
    RecordStore(tmp_path).note_failure("answer", "WebError: connection refused", True, now=5.0)
    second = RecordStore(tmp_path).note_failure("answer", "WebError: connection refused", True, now=7.0)
    assert (second.count, second.first, second.last) == (2, 5.0, 7.0)
    assert RecordStore(tmp_path).failures()["answer"] == second
    RecordStore(tmp_path).clear_failure("answer")
    assert RecordStore(tmp_path).failures() == {} and not (tmp_path / FAILURES).exists()


def test_each_mark_is_named_as_its_file_and_the_files_keep_the_names_nodes_wrote():
    """A node upgraded mid-run reads the directories the old code wrote: the members follow the files."""
    assert all(mark.name == mark.value.upper() for mark in Mark)
    assert {mark.value for mark in RECORD_MARKS} == {"record", "stop", "unenforced", "answering", "answered"}
    assert {mark.value for mark in RUN_MARKS} == {"starting", "started", "prepared", "unprepared", "ended",
                                                  "judging", "verdict"}


def test_the_store_writes_each_mark_under_its_name_on_disk(tmp_path):
    store = RecordStore(tmp_path)
    store.mark(Mark.RECORD, "{}\n")
    store.mark(Mark.STARTING, {}, STEM)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["record.json", f"starting-{STEM}.json"]
    assert store.saved_file() == tmp_path / "record.json"
