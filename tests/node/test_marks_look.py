"""One look at a record's marks a pass (marks.one_look; docs/node.md, 'Measured'): each directory listed once, what the
node writes seen at once, what another process writes seen by the next look, and a write checked
against the files as they are, never against the look."""
import pytest

from ocx.node import marks
from ocx.node.states import Mark, RecordState, RunState, StateError


def test_a_look_lists_once_and_sees_its_own_writes(tmp_path):
    marks.write(tmp_path, Mark.SAVED, {})
    with marks.one_look():
        assert marks.present(tmp_path) is marks.present(tmp_path)  # listed once
        marks.write(tmp_path, Mark.STARTING, {}, "ocx-a-b")  # the node's own write
        assert marks.run_state_of(tmp_path, "ocx-a-b") is RunState.STARTING
        (tmp_path / marks.file_name(Mark.STOP)).write_text("{}\n")  # another process's, meanwhile
        assert marks.state_of(tmp_path) is RecordState.OPEN
    assert marks.state_of(tmp_path) is RecordState.STOPPING  # the next look sees it
    with marks.one_look():
        assert marks.state_of(tmp_path) is RecordState.STOPPING


def test_a_write_is_checked_against_the_files_not_the_look(tmp_path):
    marks.write(tmp_path, Mark.SAVED, {})
    with marks.one_look():
        assert marks.state_of(tmp_path) is RecordState.OPEN
        (tmp_path / marks.file_name(Mark.ANSWERED)).write_text("{}\n")  # answered meanwhile, elsewhere
        with pytest.raises(StateError):
            marks.write(tmp_path, Mark.STOP, {})  # the table refuses a stop after the answer
        assert marks.state_of(tmp_path) is RecordState.ANSWERED  # and the look now holds the files' word
        (tmp_path / marks.file_name(Mark.PREPARED, "ocx-a-b")).write_text("{}\n")  # a preparation's, elsewhere
        marks.write(tmp_path, Mark.STARTED, {}, "ocx-a-b")  # the node's reply from systemd, after it: allowed
        assert marks.run_state_of(tmp_path, "ocx-a-b") is RunState.PREPARED
