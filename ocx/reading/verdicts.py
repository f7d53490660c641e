"""Verdicts as the repository holds them, read by V2's rules (D25).

    with Repository(path) as repository:
        for verdict in verdicts(repository, checkin): ...
        for entry in queue(repository, "dev"): ...

Everything comes from the repository: each tag change with its sender
(rcvfrom, F2), the check-in's sender and U card, and the text of a record a
verdict names. The rules themselves are ocx/protocol/verdict_rules.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..fossil.repository import Repository
from ..protocol.finder import find_message
from ..protocol.messages import Record, parse_message
from ..protocol.verdict_rules import VERDICT_TAGS, CheckinFacts, ReadVerdict, TagEvent, counted, read_verdicts


def checkin_facts(repository: Repository, checkin: str) -> CheckinFacts:
    found = repository.checkin(checkin)
    return CheckinFacts(found.hash, found.branch, found.sender.login or "", found.user)


def tag_events(repository: Repository, checkin: str) -> list[TagEvent]:
    return [TagEvent(change.name, change.op, change.value, change.sender.login or "", change.user, change.artifact)
            for change in repository.tag_history(checkin, VERDICT_TAGS)]


def record_text(repository: Repository, artifact: str) -> str | None:
    """A record's text: a forum post's body, or a ticket change's comment (D12)."""
    kind = repository.event_type(artifact)
    if kind == "f":
        return repository.post(artifact).body
    if kind == "t":
        return repository.ticket_change(artifact).comment
    return None


def record_checkins(repository: Repository):
    @lru_cache(maxsize=None)
    def lookup(record_hash: str) -> tuple[str, ...] | None:
        try:
            text = record_text(repository, record_hash)
            message = find_message(text or "")
            record = parse_message(message) if message else None
        except Exception:  # not there, or not a record: no verdict counts against it
            return None
        return tuple(record.checkins) if isinstance(record, Record) else None

    return lookup


def verdicts(repository: Repository, checkin: str) -> list[ReadVerdict]:
    """Every sender's standing verdict on CHECKIN (a full hash), counted or not."""
    return read_verdicts(checkin_facts(repository, checkin), tag_events(repository, checkin),
                         record_checkins(repository))


@dataclass(frozen=True)
class QueueEntry:
    checkin: str
    comment: str
    sender: str
    counted: list[ReadVerdict]


def queue(repository: Repository, branch: str) -> list[QueueEntry]:
    """The check-ins of BRANCH, oldest first, each with its counted verdicts (D33)."""
    lookup = record_checkins(repository)
    entries = []
    for checkin in repository.branch_checkins(branch):
        found = repository.checkin(checkin)
        facts = CheckinFacts(found.hash, found.branch, found.sender.login or "", found.user)
        standing = read_verdicts(facts, tag_events(repository, checkin), lookup)
        entries.append(QueueEntry(checkin, found.comment, facts.sender, counted(standing)))
    return entries
