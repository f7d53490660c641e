"""What else only the server knows, asked by a node elsewhere (D37).

Its clone holds every artifact but no sender and no user table, so the
three things its node decides from senders or letters come from here: a
record's answer (C4, D31: read from the served repository before every
response, so each record is answered once, D39), a runner page as the
newest version an admin or setup sent (D14), and logins' letters (their
own, D40, and as Fossil gives them, D24) with the node each run user works
for (D37).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...fossil.errors import UnknownUser
from ...fossil.repository import Repository
from ...protocol.errors import FieldError
from ..arrivals import answer_in_place
from . import ownership
from .grants import nodes_known, placed_record
from .registry import NodeEntry

if TYPE_CHECKING:
    from ..json_answers import JsonObject

RUNNER_PAGE_PREFIX = "sandbox/"  # D14 (node/runner_pages.py)


def answer_of(repository: Repository, node: NodeEntry, record_hash: str) -> JsonObject:
    """The answer RECORD_HASH has for NODE, if any: the node user's response,
    or an admin's `lost` after the record's receipt plus its wall (D31)."""
    try:
        placed = placed_record(repository, record_hash)
    except FieldError as error:
        return {"record": None, "why": str(error), "answer": None}
    found = answer_in_place(repository, placed.place_kind, placed.place, placed.hash, node=node.server_code or "",
                            node_user=node.node_user, received=placed.received,
                            wall_seconds=placed.record.budget.wall_seconds)
    return {"record": {"sender": placed.sender, "received": placed.received, "place_kind": placed.place_kind,
                       "place": placed.place},
            "answer": None if found is None else {"outcome": found.outcome.value, "note": found.note}}


def runner_page(repository: Repository, runner: str) -> JsonObject:
    version = repository.wiki_latest_by_admin(RUNNER_PAGE_PREFIX + runner)
    return {"page": None if version is None else {"hash": version.hash, "content": version.content}}


def users(repository: Repository, logins: list[str], own_server_code: str, *, owners: bool = False) -> JsonObject:
    """Each login's own letters, its letters as Fossil gives them (None: no
    such login) and, with OWNERS, the node it works for (D37); and who holds
    admin or setup now (D24)."""
    known = nodes_known(repository, own_server_code)
    found: dict[str, JsonObject | None] = {}
    for login in logins:
        try:
            letters = repository.user(login).capabilities
        except UnknownUser:
            found[login] = None
            continue
        found[login] = {"letters": letters,
                        "capabilities": "".join(sorted(repository.effective_capabilities(login)))}
    # D37 holds for a login not made yet too: the first record naming it may be for another node.
    works_for = {login: ownership.works_for(repository, login, known) for login in logins} if owners else {}
    return {"users": found, "works_for": works_for, "admins": sorted(repository.admins())}


def record_facts(repository: Repository, node: NodeEntry, record_hash: str, own_server_code: str) -> JsonObject:
    """All a node elsewhere asks before it acts on a record, in one answer:
    its answer (F3), its runner's page (D14), its user's letters and the
    node it works for (D37, D40), and who holds admin or setup (D24)."""
    found = answer_of(repository, node, record_hash)
    if found["record"] is None:
        return found
    record = placed_record(repository, record_hash).record
    page = None if record.is_command else runner_page(repository, record.runner)["page"]
    people = users(repository, [record.user], own_server_code, owners=True)
    return {**found, "runner": record.runner, "page": page, "login": record.user,
            "user": people["users"][record.user], "works_for": people["works_for"][record.user],
            "admins": people["admins"]}


FACTS_MOST = 20  # records whose facts one answer of receipts carries; a node asks for any others itself


def facts_of_records(repository: Repository, node: NodeEntry, receipts: list[JsonObject],
                     own_server_code: str) -> JsonObject:
    """For the records naming NODE among RECEIPTS (an answer of receipts), what `record` would
    answer for each, keyed by hash: the held request carries them, so the node's pass acts on a
    record it was just woken for without asking again (D38)."""
    found: dict[str, JsonObject] = {}
    for receipt in receipts:
        for hash_, kind, private in receipt["artifacts"]:
            if kind not in ("f", "t") or private or len(found) >= FACTS_MOST:
                continue
            try:
                record = placed_record(repository, hash_).record
            except FieldError:
                continue  # no record: nothing to ask about
            if record.node == node.server_code:
                found[hash_] = record_facts(repository, node, hash_, own_server_code)
    return found
