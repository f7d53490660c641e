"""Answering a record exactly once, as the node user, at its place (C4, D12, D20).

Two steps, each a mark (states.py), so a node cut off between them finishes
on its next pass: `decide_answer` keeps the outcome and note (ANSWERING),
then `answer` writes the response unless the repository already holds one
(F3: the answer is the acknowledgement, so a pass run twice, or one cut off
between writing and marking, writes no second answer), withdraws the run
user's letters (C5) and marks the record ANSWERED.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass
from typing import Any

from ..fossil.repository import Repository
from ..node.cut import cut_here
from ..node.letters import gave_letters
from ..node.record_dirs import THREAD, RecordDir, open_records
from ..node.states import Mark
from ..protocol.messages import Outcome, Response
from ..protocol.render import one_line, render_response
from .context import NodeContext


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
    def of(cls, record_dir: RecordDir) -> Target:
        opened, place_kind = record_dir.load()
        return cls(opened.hash, place_kind, opened.place, opened.received,
                   opened.record.budget.wall_seconds, opened.record.user)


def decide_answer(context: NodeContext, record_dir: RecordDir, outcome: Outcome, note: str,
                  target: Target | None = None, **extra: Any) -> None:
    """The answer, kept before it is written (ANSWERING); TARGET for a record never saved (a refusal)."""
    body = {"outcome": outcome.value, "note": note, "at": time.time(), **extra}
    if target is not None:
        body["target"] = asdict(target)
    record_dir.mark(Mark.ANSWERING, body)
    context.log(f"answer decided: {outcome.value}, {note}", record=record_dir.hash, priority=7)


def answer(context: NodeContext, record_dir: RecordDir) -> str | None:
    """Write the decided answer unless the repository holds one; withdraw; mark it answered.

    Returns the response's hash, or None when the repository already held one."""
    decided = record_dir.marked(Mark.ANSWERING) or {}
    target = Target(**decided["target"]) if "target" in decided else Target.of(record_dir)
    outcome, note = Outcome(decided["outcome"]), decided.get("note", "")
    with Repository(context.config.repository) as repository:
        # C4, D39: the served repository's answer first (a node elsewhere asks the server's node).
        existing = context.served.answer(repository, target.place_kind, target.place, target.hash,
                                         node=context.server_code, received=target.received,
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
        cut_here(context.config.name, "responded", target.hash)
    if target.user is not None and gave_letters_to(record_dir) and not decided.get("untouched"):
        withdraw(context, record_dir, target.user, target.hash)
        cut_here(context.config.name, "withdrawn", target.hash)
    record_dir.mark(Mark.ANSWERED, {"outcome": existing.outcome if existing else outcome.value,  # served.Answer: text
                                    "response": written, "at": time.time()})
    shutil.rmtree(record_dir.inbox, ignore_errors=True)  # D13: no delivery kept for a closed record
    return written


def gave_letters_to(record_dir: RecordDir) -> bool:
    """Whether the record gave its run user letters, the only ones C5 takes away: its preparation's
    note (node/letters.py), or a run prepared (a record prepared before that note was kept). A login
    that gained letters from someone else before the record's run began keeps them (D40)."""
    if gave_letters(record_dir.path):
        return True
    return any(Mark.PREPARED in run for run in record_dir.present()[1].values())


def withdraw(context: NodeContext, record_dir: RecordDir | None, user: str, record_hash: str) -> None:
    """C4: after the response, the run user holds no letters of its own, unless
    another open record of this node runs as the same user. Only the server's
    node changes letters (D37): served.py reads first, so an answer writes no
    more than it must."""
    others = [r for r in open_records(context.config) if record_dir is None or r.path != record_dir.path]
    if any(r.load()[0].record.user == user for r in others):
        context.log(f"{user} keeps its capabilities: another open record runs as it")
        return
    context.served.withdraw(record_hash, user)
