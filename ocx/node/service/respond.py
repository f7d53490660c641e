"""Answering a record exactly once, as the node user, at its place (C4, D12, D20).

The repository is the acknowledgement (F3): before writing, the node looks
for a response already there, so a pass run twice, or one that crashed
between writing and marking, writes no second answer.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass

from ...fossil import admin
from ...fossil.repository import Repository
from ...protocol.messages import Outcome, Response
from ...protocol.render import one_line, render_response
from .arrivals import answer_in_place
from .context import NodeContext
from ..records import THREAD, RecordDir, open_records


@dataclass(frozen=True)
class Target:
    """What a response needs to know of the record it answers."""

    hash: str
    place_kind: str
    place: str
    received: float = 0.0
    wall_seconds: int = 0
    user: str | None = None  # the run user whose letters are withdrawn

    @classmethod
    def of(cls, record_dir: RecordDir) -> "Target":
        opened, place_kind = record_dir.load()
        return cls(opened.hash, place_kind, opened.place, opened.received,
                   opened.record.budget.wall_seconds, opened.record.user)


def respond(context: NodeContext, target: Target, outcome: Outcome, note: str,
            record_dir: RecordDir | None = None) -> str | None:
    """Write the response unless one is there; withdraw the run user's capabilities; mark it answered.

    Returns the response's hash, or None when the repository already held one.
    """
    with Repository(context.config.repository) as repository:
        existing = answer_in_place(repository, target.place_kind, target.place, target.hash, node=context.server_code,
                                   node_user=context.config.node_user, received=target.received,
                                   wall_seconds=target.wall_seconds)
    written = None
    note = one_line(note)  # one line, no control character: nothing it echoes can open a block before ours
    if existing is None:
        response = Response(ocx=1, kind="response", node=context.server_code, answers=target.hash,
                            outcome=outcome, note=note)
        body = render_response(response)
        web = context.web()
        if target.place_kind == THREAD:
            written = web.reply(target.hash, body)  # D12: a reply to the record's post
        else:
            written = web.ticket_change(target.place, body)  # D12: appended to its ticket
        context.log(f"answered {outcome.value}: {note}", record=target.hash)
    if target.user is not None:
        withdraw(context, record_dir, target.user)
    if record_dir is not None:
        record_dir.mark("answered", {"outcome": (existing.outcome if existing else outcome).value,
                                     "response": written})
        shutil.rmtree(record_dir.inbox, ignore_errors=True)  # D13: no delivery kept for a closed record
    return written


def withdraw(context: NodeContext, record_dir: RecordDir | None, user: str) -> None:
    """C4: after the response, the run user holds no letters of its own, unless
    another open record of this node runs as the same user."""
    others = [r for r in open_records(context.config) if record_dir is None or r.path != record_dir.path]
    if any(r.load()[0].record.user == user for r in others):
        context.log(f"{user} keeps its capabilities: another open record runs as it")
        return
    admin.withdraw_capabilities(context.config.repository, user, home=context.fossil_home)
