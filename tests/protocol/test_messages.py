import pytest

from ocx.protocol import FieldError, Outcome, Record, Response, Stop, parse_message, render_message
from ocx.protocol.finder import find_message

from .examples import NODE, RECORD_HASH, ci_record, record, response, stop


def refusal(obj) -> FieldError:
    with pytest.raises(FieldError) as error:
        parse_message(obj)
    return error.value


def test_the_record_of_c2_parses_and_keeps_its_boundary():
    parsed = parse_message(record())
    assert isinstance(parsed, Record)
    assert parsed.user == "claude-91c0de" and parsed.checkins == ["trunk"]
    assert parsed.restrict.no_password is True and parsed.restrict.branch == "docs-sync"
    assert parsed.budget.wall_seconds == 7200 and parsed.budget.memory_bytes is None


def test_the_ci_record_of_c2_parses():
    parsed = parse_message(ci_record())
    assert parsed.is_command and parsed.command == ["python3", "ci.py"]


def test_stop_and_response_parse():
    assert isinstance(parse_message(stop()), Stop)
    parsed = parse_message(response())
    assert isinstance(parsed, Response) and parsed.outcome is Outcome.exited


def test_unknown_top_level_keys_are_ignored_c7():
    assert parse_message(record(later_key={"anything": 1})).user == "claude-91c0de"


@pytest.mark.parametrize("inner", ["restrict", "sandbox", "budget"])
def test_unknown_keys_inside_limits_are_refused_naming_the_key_c7(inner):
    obj = record()
    obj[inner] = {**obj[inner], "gpu": 1}
    error = refusal(obj)
    assert error.field == f"{inner}.gpu" and "C7" in error.why


@pytest.mark.parametrize("missing", ["user", "runner", "objective", "checkins", "hears", "remote", "restrict", "sandbox", "budget"])
def test_every_record_field_is_required(missing):
    obj = record()
    del obj[missing]
    assert refusal(obj).field == missing
    assert refusal(obj).why == "is required"


@pytest.mark.parametrize("change,field", [
    ({"remote": "true"}, "remote"), ({"remote": 1}, "remote"), ({"checkins": "trunk"}, "checkins"),
    ({"checkins": [1]}, "checkins[0]"), ({"user": ""}, "user"), ({"user": "has space"}, "user"),
    ({"runner": "Claude"}, "runner"), ({"objective": "  "}, "objective"), ({"budget": {}}, "budget.wall"),
    ({"budget": {"wall": "2 hours"}}, "budget.wall"), ({"budget": {"wall": "1h", "memory": "1T"}}, "budget.memory"),
    ({"budget": {"wall": "1h", "cpu": "60"}}, "budget.cpu"), ({"budget": {"wall": "1h", "processes": 0}}, "budget.processes"),
    ({"budget": "2h"}, "budget"), ({"sandbox": {"network": True, "read_only": ["/a/../etc"], "read_write": []}}, "sandbox.read_only[0]"),
    ({"sandbox": {"network": True, "read_only": [], "read_write": ["tmp"]}}, "sandbox.read_write[0]"),
    ({"sandbox": {"network": "no", "read_only": [], "read_write": []}}, "sandbox.network"),
    ({"sandbox": {"network": True, "read_only": []}}, "sandbox.read_write"),
    ({"restrict": {"no_password": "yes"}}, "restrict.no_password"),
    ({"restrict": {"own_thread": True}}, "restrict.own_thread"),
    ({"restrict": {"no_password": False, "branch": "x"}}, "restrict.branch"),
    ({"node": "abc"}, "node"), ({"command": ["x"]}, "command"),
])
def test_a_bad_field_is_named(change, field):
    assert refusal(record(**change)).field == field


def test_the_first_field_at_fault_is_named():
    error = refusal(record(user="bad user", budget={"wall": "2 hours"}))
    assert error.field == "user"


@pytest.mark.parametrize("change,field", [({"command": None}, "command"), ({"command": []}, "command"),
                                          ({"checkins": []}, "checkins"), ({"hears": ["pat"]}, "hears"),
                                          ({"command": ["ok", ""]}, "command[1]")])
def test_command_records_that_could_never_run_are_refused_d35(change, field):
    obj = ci_record()
    obj.update(change)
    if change.get("command", 0) is None:
        del obj["command"]
    assert refusal(obj).field == field


def test_kinds_and_shapes():
    assert refusal([record()]).field == ""
    assert refusal(record(kind="order")).field == "kind"
    assert refusal(stop(stops="abc")).field == "stops"
    assert refusal(response(outcome="fine")).field == "outcome"
    assert refusal(response(note=None)).field == "note"


def test_render_writes_a_message_the_finder_reads_back():
    for obj in (record(), ci_record(), stop(), response()):
        text = render_message(parse_message(obj), preface="A line for people.")
        assert text.startswith("A line for people.")
        assert parse_message(find_message(text)) == parse_message(obj)


def test_render_writes_restrict_empty_as_empty():
    text = render_message(parse_message(ci_record()))
    assert '"restrict": {}' in text and '"budget": {"wall": "2h"}' in text


def test_messages_are_immutable():
    parsed = parse_message(record())
    with pytest.raises(Exception):
        parsed.user = "other"


def test_record_hash_example_is_full():
    assert len(RECORD_HASH) == 40 and NODE


def test_message_in_a_text_is_the_valid_message_or_none():
    from ocx.protocol.messages import Response, message_in

    node, record = "6c" * 20, "ab" * 32
    body = ('{"ocx": 1, "kind": "response", "node": "%s", "answers": "%s", "outcome": "exited", "note": "n"}'
            % (node, record))
    found = message_in(f"Answered.\n\n```json\n{body}\n```\n")
    assert isinstance(found, Response) and found.node == node and found.answers == record
    assert message_in("no message here") is None
    assert message_in('```json\n{"ocx": 1, "kind": "response", "node": "x"}\n```') is None  # malformed: skipped
