"""The node's mark (D2): the last receipt a pass handled, and those it reads again first.

Lost, the node reads from the start: it may be lost, never wrong. Written whole
(files.write_atomically), so a crash leaves the old mark or the new one.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..files import write_atomically
from .context import NodeContext


def _mark_file(context: NodeContext) -> Path:
    return context.config.state_dir / "mark.json"


def read_mark(context: NodeContext) -> tuple[int, dict[int, dict[str, Any]]]:
    """The last receipt handled, and those to read again: {rcvid: a Failure's fields and the record's target}."""
    try:
        body = json.loads(_mark_file(context).read_text())
        return int(body["rcvid"]), {int(k): v for k, v in body.get("retry", {}).items()}
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return 0, {}  # D2: lost, so read again from the start


def write_mark(context: NodeContext, rcvid: int, retry: dict[int, dict[str, Any]]) -> None:
    write_atomically(_mark_file(context), json.dumps({"rcvid": rcvid, "retry": retry}) + "\n")
