"""A release request and the node's answer to it, as posts in the node's releases thread (D46).

The page runs as the Fossil server's account and cannot move a node's releases, which are
root's: so a caller with admin or setup asks, on the record, by a post (the `release` tool,
ocx/tools/release.py, writing as the caller, D21, D22), and the node, as root, acts on it
once and answers in the same thread (ocx/node_service/release_requests.py). Pure: no I/O.

A request is the first ```json block of a post whose object has the key `ocx_release`:

    {"ocx_release": "stage" | "accept" | "rollback", "node": SERVER-CODE, "checkin": HASH | null}

It holds no `ocx` key, so no reader takes it for a message of C1 (finder.py). The node
reads only the thread whose root post the node user sent, titled by `thread_title`.
"""
from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import FieldError
from .fields import FullHash, ServerCode
from .finder import fenced_json_blocks, parse_json
from .messages import field_error
from .render import one_line

KEY = "ocx_release"
ANSWER_KEY = "ocx_release_answer"
ACTIONS = ("stage", "accept", "rollback")
Action = Literal["stage", "accept", "rollback"]


def thread_title(node_name: str) -> str:
    """The title of the node's releases thread: one per node (its units' instance name)."""
    return f"OCX releases: {node_name}"


class ReleaseRequest(BaseModel):
    """What a request asks: ACTION on node NODE, for `stage` of CHECKIN (a full hash)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    ocx_release: Action = Field(description="What is asked: stage, accept or rollback.")
    node: ServerCode = Field(description="The node asked: its server-code (C1).")
    checkin: FullHash | None = Field(None, description="For stage only: the check-in to stage.")


def request_object(text: str) -> dict[str, Any] | None:
    """The first ```json block of TEXT whose object has the key `ocx_release`, or None (then the post
    is talk, not a request). A block that is not strict JSON is passed by, as D7 passes it."""
    if not isinstance(text, str):
        return None
    for block in fenced_json_blocks(text):
        try:
            found = parse_json(block)
        except (ValueError, RecursionError):
            continue
        if isinstance(found, dict) and KEY in found:
            return found
    return None


def parse_request(found: dict[str, Any]) -> ReleaseRequest:
    """FOUND as a request; FieldError names the first field at fault."""
    try:
        request = ReleaseRequest.model_validate(found)
    except ValidationError as error:
        raise field_error(error) from None
    if request.ocx_release == "stage" and request.checkin is None:
        raise FieldError("checkin", "is required to stage: the check-in to build (D45)")
    if request.ocx_release != "stage" and request.checkin is not None:
        raise FieldError("checkin", f"is only for stage, not {request.ocx_release}")
    return request


def render_request(request: ReleaseRequest, preface: str) -> str:
    block = json.dumps(request.model_dump(mode="json", exclude_none=True))
    return f"{preface.rstrip()}\n\n```json\n{block}\n```\n"


def render_answer(facts: dict[str, Any], preface: str) -> str:
    """The node's post (D46): a line for people, then its facts as a block under ANSWER_KEY.
    The preface is made one line, so what it echoes (a refusal's reason) opens no block."""
    block = json.dumps({ANSWER_KEY: facts}, ensure_ascii=False, sort_keys=True)
    return f"{one_line(preface)}\n\n```json\n{block}\n```\n"


def answer_object(text: str) -> dict[str, Any] | None:
    """The facts of a node's answer post, or None."""
    for block in fenced_json_blocks(text):
        try:
            found = parse_json(block)
        except (ValueError, RecursionError):
            continue
        if isinstance(found, dict) and isinstance(found.get(ANSWER_KEY), dict):
            facts: dict[str, Any] = found[ANSWER_KEY]
            return facts
    return None
