"""One look at a record's marks a pass (record_store.one_look; docs/node.md, 'Measured'): each directory listed once, what the
node writes seen at once, what another process writes seen by the next look, and a write checked
against the files as they are, never against the look."""
import pytest

from ocx.node.record_store import RecordStore, one_look
from ocx.node.states import Mark, RecordState, RunState, StateError


def test_a_look_lists_once_and_sees_its_own_writes(tmp_path):
    store = RecordStore(tmp_path)
    store.mark(Mark.RECORD, {})
    with one_look():
        assert store.present() is store.present()  # listed once
        store.mark(Mark.STARTING, {}, "ocx-a-b")  # the node's own write
        assert store.run_state("ocx-a-b") is RunState.STARTING
        (tmp_path / "stop.json").write_text("{}\n")  # another process's, meanwhile
        assert store.state is RecordState.OPEN
    assert store.state is RecordState.STOPPING  # the next look sees it
    with one_look():
        assert store.state is RecordState.STOPPING


def test_a_write_is_checked_against_the_files_not_the_look(tmp_path):
    store = RecordStore(tmp_path)
    store.mark(Mark.RECORD, {})
    with one_look():
        assert store.state is RecordState.OPEN
        (tmp_path / "answered.json").write_text("{}\n")  # answered meanwhile, elsewhere
        with pytest.raises(StateError):
            store.mark(Mark.STOP, {})  # the table refuses a stop after the answer
        assert store.state is RecordState.ANSWERED  # and the look now holds the files' word
        (tmp_path / "prepared-ocx-a-b.json").write_text("{}\n")  # a preparation's, elsewhere
        store.mark(Mark.STARTED, {}, "ocx-a-b")  # the node's reply from systemd, after it: allowed
        assert store.run_state("ocx-a-b") is RunState.PREPARED
