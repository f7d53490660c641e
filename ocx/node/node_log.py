"""What a node's step logs through: the node service's journal line (node_service/context.py), which
names the record a line is about and the line's syslog priority."""
from __future__ import annotations

from typing import Protocol


class NodeLog(Protocol):
    """MESSAGE logged, about RECORD (a hash) when one, at PRIORITY (syslog's: 3 error .. 7 debug)."""

    def __call__(self, message: str, /, *, record: str | None = None, priority: int = 6) -> None: ...
