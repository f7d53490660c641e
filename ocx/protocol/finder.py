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
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .errors import FieldError
from .hashes import SERVER_CODE

# A fence's opening line (CommonMark 4.5): at most three spaces, three or more
# backticks or tildes, an info string (for backticks, one without a backtick).
_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)", re.ASCII)
# What CommonMark trims around an info string and allows after a closing fence: spaces and
# tabs, never str.strip's Unicode spaces ("```json" and a U+3000 is another info string).
_MARKDOWN_BLANKS = " \t"
VERSION = 1  # C7


def _lines(text: str) -> list[str]:
    return [line.removesuffix("\r") for line in text.split("\n")]


def _fence(line: str) -> tuple[str, str] | None:
    """(marks, info string) when LINE opens a fence, else None."""
    found = _FENCE.fullmatch(line)
    if found is None or (found.group(2)[0] == "`" and "`" in found.group(3)):
        return None
    return found.group(2), found.group(3).strip(_MARKDOWN_BLANKS)


def _closes(line: str, marks: str) -> bool:
    found = _FENCE.fullmatch(line)
    return (found is not None and found.group(2)[0] == marks[0] and len(found.group(2)) >= len(marks)
            and not found.group(3).strip(_MARKDOWN_BLANKS))


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


# A whole number a message may hold: one systemd's and D-Bus's 64 bits carry
# (memory in bytes, CPU seconds). A longer literal is refused naming its field,
# not left to Python's 4,300-digit limit, whose error made the finder read the next block.
WHOLE_NUMBER_DIGITS = 19
WHOLE_NUMBER_BOUND = 2**63


class _Flaw:
    """A value OCX does not read as JSON: where it stands, the parse holds one of these."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


def _whole(text: str) -> int | _Flaw:
    if len(text.lstrip("-")) > WHOLE_NUMBER_DIGITS or abs(value := int(text)) >= WHOLE_NUMBER_BOUND:
        return _Flaw(f"is a whole number of {len(text.lstrip('-'))} digits, beyond ±2^63")
    return value


def _number(text: str) -> float | _Flaw:
    value = float(text)
    return value if math.isfinite(value) else _Flaw(f"{text[:40]} is beyond what a number may be")


def _constant(name: str) -> _Flaw:
    return _Flaw(f"{name} is not JSON")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Two readers that keep different copies of a repeated key would read two
    # different boundaries from one record (Ax1): the key is the flaw.
    found: dict[str, Any] = {}
    for key, value in pairs:
        found[key] = _Flaw("is a repeated key: readers would differ on its value") if key in found else value
    return found


def _read(block: str) -> object:
    """BLOCK as JSON, every value OCX refuses (a repeated key, NaN or
    Infinity, a number out of bounds) held as a _Flaw; ValueError when
    BLOCK is not JSON's grammar at all (json reads ASCII digits only)."""
    return json.loads(block, object_pairs_hook=_pairs, parse_constant=_constant, parse_int=_whole,
                      parse_float=_number)


def _first_flaw(value: object) -> tuple[str, str] | None:
    """(the path of the first _Flaw in VALUE, in the order written, why), or None."""
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, _Flaw):
            return path, item.why
        if isinstance(item, dict):
            stack.extend((f"{path}.{key}" if path else str(key), v) for key, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return None


def _cleared(value: dict[str, Any]) -> dict[str, Any]:
    """VALUE with every _Flaw made null: what a reader of the flawed message may look at."""
    stack: list[dict[Any, Any] | list[Any]] = [value]
    while stack:
        item = stack.pop()
        pairs = list(item.items()) if isinstance(item, dict) else list(enumerate(item))
        for key, v in pairs:
            if isinstance(v, _Flaw):
                item[key] = None
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return value


class FlawedMessage(dict[str, Any]):
    """The first block whose JSON is an object with the key `ocx` (D7), whose
    envelope (`ocx`, `kind`, `node`) reads plainly, but which holds a value
    OCX does not read: a repeated key, NaN or Infinity, a number beyond
    bounds. It is the post's message, never skipped for a later block: the
    flaw is a malformed field, which parse_message raises (D8: a record is
    refused naming it). Each flawed value reads as null."""

    flaw: FieldError


ENVELOPE = ("ocx", "kind", "node")


def parse_json(block: str) -> object:
    """BLOCK as JSON, strictly: ValueError for anything `_read` holds as a flaw."""
    obj = _read(block)
    flaw = _first_flaw(obj)
    if flaw is not None:
        raise ValueError(f"{flaw[0]}: {flaw[1]}")
    return obj


def find_message(text: str) -> dict[str, Any] | None:
    """The message object in TEXT, or None (D7). The first block whose JSON
    is an object with the key `ocx` is the message candidate; a later one is
    never read instead of it. A flaw in its envelope leaves no node it is
    plainly for: the post is then no message (C1: ignored, nothing written);
    a flaw elsewhere makes it a FlawedMessage."""
    if not isinstance(text, str):
        return None
    for block in fenced_json_blocks(text):
        try:
            obj = _read(block)
        except RecursionError:
            return None  # nested past reading: whether it is the message cannot be known, so none is
        except ValueError:
            continue  # not JSON's grammar: a block of something else (D7)
        if not isinstance(obj, dict) or "ocx" not in obj:
            continue
        flaw = _first_flaw(obj)
        if flaw is None:
            return obj
        path, why = flaw
        if path.split(".", 1)[0].split("[", 1)[0] in ENVELOPE:
            return None
        found = FlawedMessage(_cleared(obj))
        found.flaw = FieldError(path, why)
        return found
    return None


@dataclass(frozen=True)
class Envelope:
    """What C1 reads before anything else: version, kind and node."""

    version: object
    kind: object
    node: object

    def is_for(self, server_code: str) -> bool:
        """Version 1 and this node: the only messages a node looks at (C1, C7)."""
        return (is_version_one(self.version) and self.node == server_code
                and SERVER_CODE.fullmatch(server_code) is not None)


def is_version_one(value: object) -> bool:
    """The one reader of a message's version (C7): the JSON number 1, never
    `true` (Python's 1) nor `1.0`. The node, the readers and the tools all ask here."""
    return type(value) is int and value == VERSION


def envelope(obj: dict[str, Any]) -> Envelope:
    return Envelope(obj.get("ocx"), obj.get("kind"), obj.get("node"))
