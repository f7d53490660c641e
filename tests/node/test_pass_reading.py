"""What a pass knows of the open records (intake.PassReading; docs/node.md, 'Measured'): each record's directory is
listed once a pass, the one an action wrote is read again, and a record saved earlier in the same
pass is open to the next admission (whose check that a run user runs once on the node reads it)."""
from node.test_receipt_retries import context  # noqa: F401 (a fixture: a node's context in tmp_path)
from ocx.node.record_dirs import THREAD, RecordDir
from ocx.node_service.context import NodeContext
from ocx.node_service.intake import PassReading
from ocx.node.states import Mark
from ocx.protocol import parse_message
from ocx.protocol.decide import OpenRecord
from tests.protocol.examples import record


def saved(context: NodeContext, name: str, user: str) -> OpenRecord:
    opened = OpenRecord(name * 64, parse_message(record(user=user)), "t" * 40)
    RecordDir.of(context.config, opened.hash).save(opened, THREAD)
    return opened


def test_a_record_saved_in_the_pass_is_open_to_the_next_and_others_are_not_listed_again(context) -> None:
    first = saved(context, "a", "run-first")
    reading = PassReading(reader=None)
    assert [o.hash for o in reading.facts(context).open_records] == [first.hash]
    second = saved(context, "b", "run-second")  # written by an action of this pass (intake.act)
    assert reading.facts(context) is reading.known  # until the action is told, the pass knows what it read
    reading.changed(second.hash)
    assert sorted(o.hash for o in reading.facts(context).open_records) == [first.hash, second.hash]
    assert sorted(o.hash for o in reading.open_now(context)) == [first.hash, second.hash]

    # What no action of the pass wrote is not read again: a mark the node did not write in this
    # pass is the next pass's (the node writes the records' own marks, under its lock).
    RecordDir.of(context.config, first.hash).mark(Mark.ANSWERING, {"outcome": "refused", "note": "x"})
    reading.changed(second.hash)
    assert first.hash in {o.hash for o in reading.facts(context).open_records}
    reading.changed(first.hash)
    facts = reading.facts(context)
    assert [o.hash for o in facts.open_records] == [second.hash] and first.hash in facts.answered
    assert sorted(o.hash for o in reading.open_now(context)) == [first.hash, second.hash]  # answering: still open

    reading.changed(None)  # an action that may have written any: every directory read again
    assert PassReading(reader=None).facts(context) == reading.facts(context)


def test_a_record_refused_before_it_was_saved_is_never_loaded_as_open(context) -> None:
    """A refusal writes ANSWERING with no record saved (respond.decide_answer): never loaded."""
    RecordDir.of(context.config, "c" * 64).mark(Mark.ANSWERING, {"outcome": "refused", "note": "user: x"})
    reading = PassReading(reader=None)
    assert reading.open_now(context) == [] and "c" * 64 in reading.facts(context).answered
