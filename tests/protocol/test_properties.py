"""Random and malformed messages: nothing but the one typed error escapes."""
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocx.protocol import FieldError, parse_message
from ocx.protocol.finder import WHOLE_NUMBER_BOUND, FlawedMessage, envelope, find_message

from .examples import ci_record, record, response, stop

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
FIELDS = list(record()) + ["command", "stops", "answers", "outcome", "note"]
INNER = {"restrict": ["no_password", "branch", "own_thread", "x"], "sandbox": ["network", "read_only", "read_write", "x"],
         "budget": ["wall", "cpu", "memory", "processes", "x"]}


def parses_or_refuses(obj) -> None:
    try:
        parse_message(obj)
    except FieldError as error:
        assert isinstance(error.field, str) and error.why
        assert str(error).startswith(error.field)


@given(json_values)
def test_any_json_value(value):
    parses_or_refuses(value)


@st.composite
def mutated(draw):
    base = draw(st.sampled_from([record(), ci_record(), stop(), response()]))
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["set", "delete", "inner"]))
        key = draw(st.sampled_from(FIELDS))
        if action == "set":
            base[key] = draw(json_values)
        elif action == "delete":
            base.pop(key, None)
        else:
            outer = draw(st.sampled_from(list(INNER)))
            inner = base.get(outer)
            if isinstance(inner, dict):
                inner = dict(inner)
                inner[draw(st.sampled_from(INNER[outer]))] = draw(json_values)
                base[outer] = inner
    return base


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_messages(obj):
    parses_or_refuses(obj)
    envelope(obj).is_for("6cbe285e95a3a124176569ee9243f2a4e9ecdc20")


@given(st.text(max_size=300))
def test_any_text_finds_a_message_or_none(text):
    found = find_message(text)
    assert found is None or (isinstance(found, dict) and "ocx" in found)


@given(mutated(), st.text(max_size=40), st.text(max_size=40))
def test_a_message_survives_free_text_around_it(obj, before, after):
    body = f"{before}\n```json\n{json.dumps(obj)}\n```\n{after}"
    found = find_message(body)
    # text before it could itself open a block; otherwise the finder reads ours.
    if "```" not in before and "ocx" in obj:
        if within_bounds(obj):
            assert found == obj
        else:  # a whole number past ±2^63: still this block, refused (D7, D8), or none if in the envelope
            assert found is None or isinstance(found, FlawedMessage)


def within_bounds(value) -> bool:
    if isinstance(value, dict):
        return all(within_bounds(v) for v in value.values())
    if isinstance(value, list):
        return all(within_bounds(v) for v in value)
    return not isinstance(value, int) or isinstance(value, bool) or abs(value) < WHOLE_NUMBER_BOUND
