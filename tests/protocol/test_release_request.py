"""A release request and the node's answer as posts (D46; ocx/protocol/release_request.py): found in
any text without raising, never a message of C1, refused naming the field, and an answer's line
never opens a block of its own whatever its reason echoes."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.protocol.errors import FieldError
from ocx.protocol.finder import find_message
from ocx.protocol.release_request import (
    ReleaseRequest,
    answer_object,
    parse_request,
    render_answer,
    render_request,
    request_object,
)

CODE = "c" * 40
CHECKIN = "d" * 64


def block(obj: object) -> str:
    return f"Text.\n\n```json\n{json.dumps(obj)}\n```\n"


@given(st.text())
def test_any_text_is_read_without_raising(text):
    found = request_object(text)
    assert found is None or "ocx_release" in found
    answer_object(text)


@given(st.sampled_from(["stage", "accept", "rollback"]))
def test_a_rendered_request_reads_back_and_is_never_a_message(step):
    request = ReleaseRequest(ocx_release=step, node=CODE, checkin=CHECKIN if step == "stage" else None)
    text = render_request(request, "An admin asks.")
    assert parse_request(request_object(text)) == request
    assert find_message(text) is None  # no `ocx` key: no reader of C1 takes it for a record


@pytest.mark.parametrize("obj, field", [
    ({"ocx_release": "explode", "node": CODE}, "ocx_release"),
    ({"ocx_release": "accept"}, "node"),
    ({"ocx_release": "accept", "node": "nope"}, "node"),
    ({"ocx_release": "stage", "node": CODE}, "checkin"),
    ({"ocx_release": "stage", "node": CODE, "checkin": "abc"}, "checkin"),
    ({"ocx_release": "rollback", "node": CODE, "checkin": CHECKIN}, "checkin"),
    ({"ocx_release": "accept", "node": CODE, "also": 1}, "also"),
    ({"ocx_release": 1, "node": CODE}, "ocx_release"),
])
def test_a_bad_request_is_refused_naming_its_field(obj, field):
    with pytest.raises(FieldError) as refused:
        parse_request(request_object(block(obj)))
    assert refused.value.field == field


def test_the_first_block_with_the_key_is_the_request_and_talk_is_none():
    text = block({"other": 1}) + block({"ocx_release": "accept", "node": CODE}) + block({"ocx_release": "x"})
    assert request_object(text) == {"ocx_release": "accept", "node": CODE}
    assert request_object("When is the next release?") is None
    assert request_object("    ```json\n{\"ocx_release\": \"accept\"}\n    ```\n") is None  # code, not a block


@given(st.text())
def test_an_answers_line_never_opens_a_block_whatever_it_echoes(why):
    text = render_answer({"step": "accept", "why": why}, f"refused, {why}")
    assert answer_object(text) == {"step": "accept", "why": why}
