"""Which response answers a record (C4, D31). Pure.

Every reader of the repository asks it: the node before it acts on a
record or writes a response, the `stop` tool, `ocx activity`. One rule, so
they never disagree about whether a record is still open.
"""
from __future__ import annotations

from collections.abc import Callable

from .messages import Outcome, Response


def answers_record(response: Response, record_hash: str, sender: str | None, *, node_user: str,
                   holds_admin: Callable[[str], bool], received: float, record_received: float,
                   wall_seconds: int) -> bool:
    """Whether RESPONSE, sent by SENDER (rcvfrom, F2) and received at RECEIVED
    (Unix seconds), is the answer to the record RECORD_HASH.

    The node user's response answers it (C4); so does a `lost` one from an
    admin or setup sender once the record's receipt plus its wall has passed
    (D31). `holds_admin` is asked only for such a `lost` one."""
    if response.answers != record_hash or not sender:
        return False
    if sender == node_user:
        return True
    return (response.outcome is Outcome.lost and received >= record_received + wall_seconds
            and holds_admin(sender))
