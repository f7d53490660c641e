"""A node elsewhere leaves the server's list (D36, D31, C5): replaced by a host
joining under its name with an admin's word, or taken off the list by an admin
(`ocx node remove NAME` on the server's host).

What a node leaves behind is made harmless at once: every run user working
for its server-code loses its letters (C5: the host gone, nothing else would
take them back), and, when it is taken off the list, its node user too (its
letters withdrawn, its password replaced by one no one is told, its
registration turned into a note of what it was, so it is no longer listed).
Its open records are found, each with the time D31 lets an admin answer it
`lost` (its receipt plus its wall): the command answers those due as the admin
who runs it, and names the others with the time they fall due. Before then
D31 takes no `lost` answer, and nothing the old host runs can write anything
meanwhile.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...fossil.repository import Repository
from ..arrivals import answer_in_place
from . import ownership, registry
from .registry import NodeEntry

if TYPE_CHECKING:
    from ...fossil.artifacts import Sender
    from ..json_answers import JsonObject


@dataclass(frozen=True)
class OpenRecord:
    hash: str
    due: float  # Unix seconds: its receipt plus its wall, when D31 lets an admin answer it lost

    def json(self) -> JsonObject:
        return {"record": self.hash, "due": self.due}


@dataclass(frozen=True)
class Left:
    node: NodeEntry
    withdrawn: tuple[str, ...]  # run users whose letters were taken back
    open: tuple[OpenRecord, ...]  # its records no answer holds yet

    def json(self) -> JsonObject:
        return {"node": self.node.json(), "withdrawn": list(self.withdrawn), "open": [r.json() for r in self.open]}


def open_records(repository: Repository, node: NodeEntry) -> list[OpenRecord]:
    """NODE's records (sent by an admin or setup, as readers count them) that no answer holds, in receipt order."""
    from ...protocol.messages import Record, message_in  # pydantic: only on this rare path

    code = node.server_code
    if code is None:
        return []
    found: list[tuple[int, str, str, str, float, str]] = []
    for post in repository.forum_posts():
        if post.edit_of is None and not post.pending_moderation and code in post.body:
            found.append((post.sender.rcvid or 0, post.hash, "thread", post.root, _seconds(post.sender), post.body))
    for change in repository.all_ticket_changes():
        if code in (change.comment or ""):
            found.append((change.sender.rcvid or 0, change.hash, "ticket", change.ticket, _seconds(change.sender),
                          change.comment or ""))
    records = []
    for _rcvid, hash_, kind, place, received, text in sorted(found):
        message = message_in(text)
        if not isinstance(message, Record) or message.node != code:
            continue
        if not repository.holds_admin(repository.sender(hash_).login):
            continue
        wall = message.budget.wall_seconds
        if answer_in_place(repository, kind, place, hash_, node=code, node_user=node.node_user, received=received,
                           wall_seconds=wall) is None:
            records.append(OpenRecord(hash_, received + wall))
    return records


def _seconds(sender: Sender) -> float:
    return sender.time.timestamp() if sender.time else 0.0


def retire(repository_path: str, node: NodeEntry, *, home: Path) -> Left:
    """NODE's server-code leaves the list: its run users hold no letters, and its open records are found."""
    from ...fossil import admin

    with Repository(repository_path) as repository:
        workers = [u.login for u in repository.users()
                   if node.server_code and ownership.works_for_text(u.contact) == node.server_code and u.capabilities]
        left_open = open_records(repository, node)
    for login in workers:
        admin.withdraw_capabilities(repository_path, login, home=home)
    return Left(node, tuple(workers), tuple(left_open))


def remove(repository_path: str, name: str, *, home: Path) -> Left:
    """Node NAME off the list: its node user holds no letters and no password anyone knows, and its
    registration becomes a note; then retire. FieldError("name") when no node of that name is listed."""
    from ...fossil import admin
    from ...protocol.errors import FieldError

    with Repository(repository_path) as repository:
        node = next((e for e in registry.elsewhere(repository) if e.name == name), None)
    if node is None:
        raise FieldError("name", f"no node elsewhere named {name!r} is on this repository's list (D36)")
    admin.withdraw_capabilities(repository_path, node.node_user, home=home)
    admin.set_random_password(repository_path, node.node_user, home=home)  # told to no one
    admin.set_contact(repository_path, node.node_user, registry.REMOVED + json.dumps(
        {"name": node.name, "server_code": node.server_code}, sort_keys=True), home=home)
    return retire(repository_path, node, home=home)
