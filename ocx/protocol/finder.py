"""Finding a message in a post's body or a ticket change's comment (D7, C1).

A message is the first fenced block opened by a line "```json" whose JSON is
an object with the key `ocx`. Text around it is free. Nothing here raises:
a text that holds no message gives None.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .hashes import SERVER_CODE

_OPEN = "```json"
_CLOSE = "```"


def fenced_json_blocks(text: str):
    """Each block opened by a ```json line and closed by a ``` line, in order."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == _OPEN:
            for end in range(index + 1, len(lines)):
                if lines[end].strip() == _CLOSE:
                    yield "\n".join(lines[index + 1 : end])
                    index = end
                    break
            else:
                return  # an unclosed fence is not a block
        index += 1


class _Duplicate(ValueError):
    pass


def _no_duplicate_keys(pairs):
    # Two readers that keep different copies of a repeated key would read two
    # different boundaries from one record (Ax1), so such a block is no message.
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise _Duplicate("duplicate key")
    return dict(pairs)


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON")


def parse_json(block: str) -> object:
    return json.loads(block, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)


def find_message(text: str) -> dict | None:
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
        version_one = type(self.version) is int and self.version == 1  # not true, not 1.0
        return version_one and self.node == server_code and SERVER_CODE.match(server_code) is not None


def envelope(obj: dict) -> Envelope:
    return Envelope(obj.get("ocx"), obj.get("kind"), obj.get("node"))
