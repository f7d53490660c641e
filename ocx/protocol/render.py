"""Writing a message as the Markdown body of a post or ticket change (C1)."""
from __future__ import annotations

import json

from pydantic import BaseModel


def message_object(message: BaseModel) -> dict:
    """The message as JSON data, written out in full, absent options left out."""
    return message.model_dump(mode="json", exclude_none=True)


def render_message(message: BaseModel, preface: str = "") -> str:
    """A fenced JSON block (D7), after an optional line of text for people."""
    block = "```json\n" + json.dumps(message_object(message), ensure_ascii=False) + "\n```\n"
    return f"{preface.rstrip()}\n\n{block}" if preface else block
