"""The first ```json block whose JSON is an object with the key `ocx` is the
post's message (D7): a repeated key, NaN or Infinity, or a number beyond
bounds in it never makes the finder read a later block instead. Outside the
envelope such a flaw is a malformed field, refused naming it (D8); in the
envelope (`ocx`, `kind`, `node`) no node is plainly named, and the post is
no message at all (C1)."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.protocol import FieldError, parse_message
from ocx.protocol.decide import Ignore, NodeFacts, Refuse, decide
from ocx.protocol.finder import WHOLE_NUMBER_BOUND, FlawedMessage, find_message, parse_json
from ocx.protocol.messages import message_in

from .examples import NODE, record
from .test_decide import arrival

HIDDEN = record(objective="the hidden second block", user="root-ish")
FLAWS = {  # a JSON text for a value, and what the refusal says of it
    "NaN": "NaN is not JSON", "Infinity": "Infinity is not JSON", "-Infinity": "-Infinity is not JSON",
    "9" * 4300: "4300 digits", "9" * 4301: "4301 digits", "-" + "9" * 30: "30 digits", str(WHOLE_NUMBER_BOUND): "beyond",
    "1e999": "beyond what a number may be",
}


def first_block_with(key: str, literal: str) -> str:
    """A record's JSON text whose KEY (top level) holds LITERAL as written."""
    text = json.dumps(record())
    return text[:-1] + f', "{key}": {literal}}}'


def post(*blocks: str) -> str:
    return "A record.\n\n" + "".join(f"```json\n{block}\n```\n\nmore words\n\n" for block in blocks)


@pytest.mark.parametrize("literal,why", sorted(FLAWS.items()))
def test_a_flawed_value_is_the_message_refused_naming_its_field(literal: str, why: str) -> None:
    text = json.dumps(record())
    flawed = text.replace('"budget": {"wall": "2h"}', f'"budget": {{"wall": "2h", "cpu": {literal}}}')
    found = find_message(post(flawed, json.dumps(HIDDEN)))
    assert isinstance(found, FlawedMessage) and found["objective"] == record()["objective"]
    assert found["budget"]["cpu"] is None  # what a reader of it sees
    with pytest.raises(FieldError) as refused:
        parse_message(found)
    assert refused.value.field == "budget.cpu" and why in refused.value.why
    assert message_in(post(flawed, json.dumps(HIDDEN))) is None  # a reader skips it; never reads the second


def test_a_repeated_key_is_the_message_refused_naming_the_key() -> None:
    repeated = first_block_with("user", '"someone-else"')
    found = find_message(post(repeated, json.dumps(HIDDEN)))
    assert isinstance(found, FlawedMessage)
    with pytest.raises(FieldError) as refused:
        parse_message(found)
    assert refused.value.field == "user" and "repeated" in refused.value.why
    nested = json.dumps(record()).replace('"network": true', '"network": true, "network": false')
    assert find_message(post(nested, json.dumps(HIDDEN))).flaw.field == "sandbox.network"
    listed = json.dumps(record()).replace('"read_only": []', '"read_only": [{"a": 1, "a": 2}]')
    assert find_message(post(listed)).flaw.field == "sandbox.read_only[0].a"


@pytest.mark.parametrize("key", ["ocx", "kind", "node"])
@pytest.mark.parametrize("literal", ["NaN", "9" * 4301, '"again"'])
def test_a_flawed_envelope_makes_the_post_no_message_not_the_second_block(key: str, literal: str) -> None:
    assert find_message(post(first_block_with(key, literal), json.dumps(HIDDEN))) is None


def test_a_block_that_is_not_json_or_not_an_ocx_object_is_still_passed_over() -> None:
    """D7's own words: the first block *whose JSON is an object with the key ocx*."""
    assert find_message(post('{"ocx": 1,}', json.dumps(HIDDEN))) == HIDDEN
    assert find_message(post('[1, 2]', '{"example": NaN}', json.dumps(HIDDEN))) == HIDDEN


def test_nesting_past_reading_is_no_message_not_the_second_block() -> None:
    assert find_message(post('{"ocx": 1, "x": ' + "[" * 200_000 + "]" * 200_000 + "}", json.dumps(HIDDEN))) is None


def test_the_node_refuses_an_admins_flawed_record_and_ignores_a_flawed_envelope() -> None:
    flawed = first_block_with("objective", '"again"')
    action = decide(arrival(text=post(flawed, json.dumps(HIDDEN))), NodeFacts(NODE, "ocx-node"))
    assert len(action) == 1 and isinstance(action[0], Refuse) and "objective" in str(action[0].error)
    ignored = decide(arrival(text=post(first_block_with("node", '"' + NODE + '"'), json.dumps(HIDDEN))),
                     NodeFacts(NODE, "ocx-node"))
    assert len(ignored) == 1 and isinstance(ignored[0], Ignore)


def test_strict_parse_json_refuses_every_flaw() -> None:
    for literal in FLAWS:
        with pytest.raises(ValueError):
            parse_json(f'{{"a": {literal}}}')
    with pytest.raises(ValueError):
        parse_json('{"a": 1, "a": 1}')
    assert parse_json('{"a": [1, 2.5, -9223372036854775807]}') == {"a": [1, 2.5, -9223372036854775807]}


keys = st.sampled_from([k for k in record() if k not in ("ocx", "kind", "node")] + ["extra"])
flaw_literals = st.sampled_from(sorted(FLAWS) + ['"repeated"']) | st.integers(min_value=2**63, max_value=2**400).map(str)


@given(keys, flaw_literals)
def test_no_flaw_in_the_first_block_ever_reads_the_second(key: str, literal: str) -> None:
    found = find_message(post(first_block_with(key, literal), json.dumps(HIDDEN)))  # "extra" once: no repeat
    assert found is not None and found.get("objective") != HIDDEN["objective"]
    assert isinstance(found, FlawedMessage) or (key == "extra" and literal == '"repeated"')
    if isinstance(found, FlawedMessage):
        with pytest.raises(FieldError) as refused:
            parse_message(found)
        assert refused.value.field == key


@given(st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1))
def test_whole_numbers_within_bounds_read_as_written(number: int) -> None:
    assert find_message(post(first_block_with("extra", str(number)))) == {**record(), "extra": number}
