"""`ocx node remove NAME --at-node SRV`: a node elsewhere off the server's list (D36), as root on the
server's host (serving/leaving.py says what is taken back). With an admin's login, each of the node's
open records whose receipt plus wall has passed is answered `lost` as that admin (D31, the `stop`
tool's own way); the others are named with the time they fall due."""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from ...protocol.errors import FieldError, OcxError
from .. import config as node_config


class LeaveError(OcxError):
    """The node cannot be taken off the list as asked; the message says why."""


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def remove_node(at_node: str, name: str, login: str | None, password_file: str | None,
                answer_lost: Callable[[str, str, str, list[str]], list[str]]) -> list[str]:
    """What was done, line by line. ANSWER_LOST(node, login, password, records): the `stop` tool's
    `lost` for each record due, as that admin (the entry layer's: the node imports no tool)."""
    from ..serving.leaving import remove

    if os.geteuid() != 0:
        raise LeaveError("ocx node remove must run as root, on the server's host")
    try:
        config = node_config.load(at_node)
    except FileNotFoundError:
        raise LeaveError(f"no node {at_node!r} on this host (no /etc/ocx/{at_node}.json)") from None
    if config.elsewhere:
        raise LeaveError(f"{at_node} is a node elsewhere: the server's node keeps the list (D36)")
    if (login is None) != (password_file is None):
        raise LeaveError("an admin's login comes with its --password-file")
    try:
        left = remove(config.repository, name, home=config.state_dir / "home")
    except FieldError as error:
        raise LeaveError(f"{error.field}: {error.why}") from None
    lines = [f"node {name} ({left.node.server_code}) off the list: node user {left.node.node_user} holds no "
             "letters and a password no one was told"]
    lines += [f"run user {user}: letters withdrawn (C5)" for user in left.withdrawn]
    due = [r for r in left.open if r.due <= time.time()] if login is not None else []
    if due:
        lines += answer_lost(at_node, str(login), Path(str(password_file)).read_text().splitlines()[0],
                             [r.hash for r in due])
    for record in left.open:
        if record not in due:
            lines.append(f"record {record.hash}: open; an admin answers it lost from {_when(record.due)} (D31): "
                         f"ocx stop --record {record.hash} --lost")
    return lines
