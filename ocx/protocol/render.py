"""Writing a message as the Markdown body of a post or ticket change (C1)."""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only annotations: a verdict's reader (is_control) starts without pydantic (docs/node.md)
    from pydantic import BaseModel

    from .messages import Response


NOTE_CHARACTERS = 1000  # a note is for people: one line, of a length a page shows


def is_control(character: str) -> bool:
    """A character that is not one line's text: C0 and C1 controls, and the
    line and paragraph separators str.splitlines and Markdown break on."""
    code = ord(character)
    return code < 32 or 0x7F <= code < 0xA0 or character in "\u2028\u2029"


_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # is_control's characters, as one class


def has_control(text: str) -> bool:
    """Whether any character of TEXT is_control: one regex search, for a
    reader that checks every verdict of a queue (docs/verdicts.md, 'Cost')."""
    return _CONTROLS.search(text) is not None


def one_line(text: str, limit: int = NOTE_CHARACTERS) -> str:
    """TEXT as one line of plain text: every control character a space, runs of
    spaces one, at most LIMIT characters. A note (C4) that echoes what a
    record or a run said (a path, a program's output) so never puts a line,
    let alone a fence, before the response's own block (docs/security.md, 'Class 7')."""
    cleaned = " ".join("".join(" " if is_control(c) else c for c in text).split())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def message_object(message: BaseModel) -> dict[str, Any]:
    """The message as JSON data, written out in full, absent options left out."""
    return message.model_dump(mode="json", exclude_none=True)


def render_message(message: BaseModel, preface: str = "") -> str:
    """A fenced JSON block (D7), after an optional line of text for people."""
    block = "```json\n" + json.dumps(message_object(message), ensure_ascii=False) + "\n```\n"
    return f"{preface.rstrip()}\n\n{block}" if preface else block


def render_response(response: Response) -> str:
    """A response's post (C4): a line for people, then its block. The note is
    made one line first (one_line), so the first block of the post is the
    response's own, whatever the note echoes."""
    outcome = getattr(response.outcome, "value", response.outcome)
    return render_message(response,
                          preface=f"Record {response.answers[:12]}: **{outcome}**, {one_line(response.note)}.")
