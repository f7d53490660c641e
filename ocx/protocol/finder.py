"""Finding a message in a post's body or a ticket change's comment (D7, C1).

A message is the first fenced block opened by a line "```json" whose JSON is
an object with the key `ocx`. Text around it is free. Nothing here raises:
a text that holds no message gives None.

"A line ```json" is read as Markdown reads it (CommonMark, as Fossil renders
the post), so that what a reader sees as code is never a message: the
opening line is at most three spaces in (four or more, or a tab, is an
indented code block), and one inside another fence (``` with another
info string, ````, ~~~) is that fence's text. A fence closes at a line of at
least as many of its own marks, at most three spaces in, and nothing else.
Lines end at "\n" (a "\r" before it is dropped), never at the other line
breaks str.splitlines knows, which a JSON string may hold.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

from .hashes import SERVER_CODE

# A fence's opening line (CommonMark 4.5): at most three spaces, three or more
# backticks or tildes, an info string (for backticks, one without a backtick).
_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
VERSION = 1  # C7


def _lines(text: str) -> list[str]:
    return [line.removesuffix("\r") for line in text.split("\n")]


def _fence(line: str) -> tuple[str, str] | None:
    """(marks, info string) when LINE opens a fence, else None."""
    found = _FENCE.fullmatch(line)
    if found is None or (found.group(2)[0] == "`" and "`" in found.group(3)):
        return None
    return found.group(2), found.group(3).strip()


def _closes(line: str, marks: str) -> bool:
    found = _FENCE.fullmatch(line)
    return (found is not None and found.group(2)[0] == marks[0] and len(found.group(2)) >= len(marks)
            and not found.group(3).strip())


def fenced_json_blocks(text: str) -> Iterator[str]:
    """Each block opened by a ```json line and closed by its fence, in order (D7)."""
    lines = _lines(text)
    index = 0
    while index < len(lines):
        opened = _fence(lines[index])
        index += 1
        if opened is None:
            continue  # text, or an indented code block's line: neither opens anything
        marks, info = opened
        for end in range(index, len(lines)):
            if _closes(lines[end], marks):
                if marks == "```" and info == "json":
                    yield "\n".join(lines[index:end])
                index = end + 1
                break
        else:
            return  # an unclosed fence runs to the end: nothing after it is a block


class _Duplicate(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Two readers that keep different copies of a repeated key would read two
    # different boundaries from one record (Ax1), so such a block is no message.
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise _Duplicate("duplicate key")
    return dict(pairs)


def _no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def parse_json(block: str) -> object:
    return json.loads(block, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)


def find_message(text: str) -> dict[str, Any] | None:
    """The message object in TEXT, or None (D7)."""
    if not isinstance(text, str):
        return None
    for block in fenced_json_blocks(text):
        try:
            obj = parse_json(block)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and "ocx" in obj:
            return obj
    return None


@dataclass(frozen=True)
class Envelope:
    """What C1 reads before anything else: version, kind and node."""

    version: object
    kind: object
    node: object

    def is_for(self, server_code: str) -> bool:
        """Version 1 and this node: the only messages a node looks at (C1, C7)."""
        return is_version_one(self.version) and self.node == server_code and SERVER_CODE.fullmatch(server_code) is not None


def is_version_one(value: object) -> bool:
    """The one reader of a message's version (C7): the JSON number 1, never
    `true` (Python's 1) nor `1.0`. The node, the readers and the tools all ask here."""
    return type(value) is int and value == VERSION


def envelope(obj: dict[str, Any]) -> Envelope:
    return Envelope(obj.get("ocx"), obj.get("kind"), obj.get("node"))
