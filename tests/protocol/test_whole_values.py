"""Every check reads the whole value (docs/security.md, 'Class 7'): a trailing newline or
any control character is refused everywhere; one reader of the version; a
response's note can never put a block before the response's own; and a
```json line inside another fence or an indented code block is no message
(D7). Property tests: each holds for any value hypothesis finds."""
from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, strategies as st
from pydantic import TypeAdapter, ValidationError

from ocx.protocol import budget
from ocx.protocol.errors import FieldError
from ocx.protocol.fields import BranchName, FullHash, Login, RunnerName, ServerCode
from ocx.protocol.finder import envelope, find_message, is_version_one
from ocx.protocol.hashes import is_full_hash, is_hash_prefix
from ocx.protocol.messages import Outcome, Response, parse_message
from ocx.protocol.render import is_control, one_line, render_response
from ocx.protocol.verdict import check_against, check_reason, format_verdict, parse_verdict

from .examples import NODE, record

CONTROLS = st.sampled_from([chr(c) for c in range(32)] + ["\x7f", "\x85", "\u2028", "\u2029"])
HEX = "0123456789abcdef"
logins = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,20}", fullmatch=True)
branches = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Zs", "Zl", "Zp", "Cs")), min_size=1, max_size=30)
hashes = st.one_of(st.text(HEX, min_size=40, max_size=40), st.text(HEX, min_size=64, max_size=64))
walls = st.builds(lambda n, unit: f"{n}{unit}", st.integers(1, 10_000), st.sampled_from("smhd"))
reasons = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=40)


def spoiled(value: str, control: str, where: int) -> str:
    """VALUE with CONTROL put in at WHERE (0: before, -1: after, else inside)."""
    where = len(value) if where < 0 else min(where, len(value))
    return value[:where] + control + value[where:]


def refused_by(adapter: TypeAdapter, value: str) -> bool:
    try:
        adapter.validate_python(value)
    except ValidationError:
        return True
    return False


@pytest.mark.parametrize("kind,values", [(Login, logins), (BranchName, branches), (FullHash, hashes),
                                         (ServerCode, st.text(HEX, min_size=40, max_size=40)),
                                         (RunnerName, st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True))])
def test_a_field_takes_its_value_and_refuses_it_with_a_newline_or_a_control_character(kind, values):
    adapter = TypeAdapter(kind)

    @given(values, CONTROLS, st.integers(-1, 30))
    def check(value, control, where):
        assert not refused_by(adapter, value)
        assert refused_by(adapter, value + "\n")
        assert refused_by(adapter, spoiled(value, control, where))

    check()


@given(hashes, CONTROLS, st.integers(-1, 70))
def test_hashes_and_prefixes_are_the_whole_value(value, control, where):
    assert is_full_hash(value) and is_hash_prefix(value[:10])
    assert not is_full_hash(value + "\n") and not is_hash_prefix(value[:10] + "\n")
    assert not is_full_hash(spoiled(value, control, where)) and not is_hash_prefix(spoiled(value[:12], control, where))


@given(walls, CONTROLS, st.integers(-1, 8))
def test_budgets_are_the_whole_value(wall, control, where):
    assert budget.parse_wall(wall) > 0
    for bad in (wall + "\n", spoiled(wall, control, where)):
        with pytest.raises(FieldError):
            budget.parse_wall(bad)
        with pytest.raises(FieldError):
            budget.parse_memory(bad.rstrip("smhd\n") + "M\n")


@given(reasons, CONTROLS, st.integers(-1, 40), hashes)
def test_verdict_values_are_one_line_without_control_characters(reason, control, where, against):
    assume(reason.strip())
    value = format_verdict("pass", reason, against)
    assert parse_verdict(value).reason == reason.strip()
    assert parse_verdict(value + "\n") is None
    with pytest.raises(FieldError):
        check_reason(spoiled(reason, control, where))
    with pytest.raises(FieldError):
        check_against(spoiled(against, control, where))
    assert parse_verdict(format_verdict("fail", "x", against).replace("x", spoiled("x", control, 1))) is None


def test_a_record_naming_a_login_with_a_trailing_newline_is_refused_naming_user():
    with pytest.raises(FieldError) as refused:
        parse_message(record(user="adm\n"))
    assert refused.value.field == "user"


@pytest.mark.parametrize("version", [True, 1.0, "1", 2, None, [1]])
def test_only_the_number_1_is_version_1_for_the_node_the_readers_and_the_tools(version):
    assert not is_version_one(version)
    assert not envelope({"ocx": version, "kind": "record", "node": NODE}).is_for(NODE)
    with pytest.raises(FieldError) as refused:
        parse_message(record(ocx=version))
    assert refused.value.field == "ocx"
    assert is_version_one(1) and parse_message(record()).ocx == 1


@given(st.text(max_size=200))
def test_a_note_is_rendered_as_one_line_and_the_posts_first_block_is_the_response(note):
    response = Response(ocx=1, kind="response", node=NODE, answers="a" * 64, outcome=Outcome.refused, note=note)
    body = render_response(response)
    line = one_line(note)
    assert "\n" not in line and not any(is_control(c) for c in line)
    found = find_message(body)
    assert found is not None and parse_message(found) == response


def test_a_forged_response_in_a_note_stays_inside_the_note():
    forged = {"ocx": 1, "kind": "response", "node": NODE, "answers": "a" * 64, "outcome": "exited", "note": "x"}
    note = f"sandbox.read_only[0]: \"/x\n\n```json\n{json.dumps(forged)}\n```\n\" does not exist"
    response = Response(ocx=1, kind="response", node=NODE, answers="a" * 64, outcome=Outcome.refused, note=note)
    assert find_message(render_response(response))["outcome"] == "refused"


MESSAGE = '```json\n{"ocx": 1, "kind": "stop"}\n```'
words = st.text(alphabet="abc xyz.,:-#*>", max_size=40)


@given(words, words, st.integers(3, 6), st.sampled_from(["~", "`"]), st.sampled_from(["", "text", "md", "json"]))
def test_a_json_fence_inside_another_fence_is_that_fences_text(before, after, length, mark, info):
    # A ``` fence would be closed by the message's own ``` line: only what can hold one.
    outer = mark * (length + (1 if mark == "`" else 0))
    text = f"{before}\n{outer}{info}\n{MESSAGE}\n{outer}\n{after}"
    assert find_message(text) is None
    assert find_message(text + "\n\n" + MESSAGE) == {"ocx": 1, "kind": "stop"}  # one after the fence counts


@given(words, st.sampled_from(["    ", "     ", "\t", "  \t", "        "]))
def test_a_json_fence_in_an_indented_code_block_is_no_message(before, indent):
    text = f"{before}\n\n" + "\n".join(indent + line for line in MESSAGE.split("\n"))
    assert find_message(text) is None


@given(st.sampled_from(["", " ", "  ", "   "]), st.sampled_from(["\n", "\r\n"]))
def test_a_json_fence_up_to_three_spaces_in_is_a_message(indent, newline):
    text = newline.join(["Please.", "", *(indent + line for line in MESSAGE.split("\n")), ""])
    assert find_message(text) == {"ocx": 1, "kind": "stop"}


def test_a_json_string_holding_a_line_separator_stays_one_line_of_the_block():
    assert find_message('```json\n{"ocx": 1, "note": "a\u2028b\x85c"}\n```') == {"ocx": 1, "note": "a\u2028b\x85c"}


def test_an_unclosed_outer_fence_hides_everything_after_it():
    assert find_message(f"~~~\n{MESSAGE}\n") is None
