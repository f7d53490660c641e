"""A record in a ticket: answered in the ticket (D12); a forged U card there is no admin (F2, C1)."""

import pytest

from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository
from ocx.protocol import Outcome
from ocx.protocol.finder import find_message

from .harness import fenced, ticket_responses, wait_for

pytestmark = pytest.mark.systemd


def change_hash(node, ticket: str, marker: str) -> str:
    with node.repository() as repository:
        return next(c.hash for c in repository.ticket_changes(ticket) if marker in (c.comment or ""))


def test_a_record_in_a_ticket_is_answered_in_that_ticket(node):
    web = node.admin.web(node.url)
    ticket = web.new_ticket("Keep the docs in step", "A ticket for a run.")
    fields = node.record(objective="exit 4")
    web.ticket_change(ticket, fenced(fields))
    record = change_hash(node, ticket, fields["user"])
    answers = wait_for(lambda: ticket_responses(node, ticket, record), 60, 0.2, "a response in the ticket")
    assert len(answers) == 1
    response, sender = answers[0]
    assert sender == node.config.node_user
    assert response.outcome is Outcome.exited and response.note.startswith("exit 4")


def test_a_forged_u_card_does_not_make_a_record_from_an_admin(node, tmp_path):
    ticket = node.admin.web(node.url).new_ticket("Forgery", "Someone will forge a record here.")
    mallory = node.login("mallory", "gio234rcw")
    clone = node.clone_of(mallory)
    home = str(tmp_path)
    # In her clone, the U card says admin; the server still records her as the sender.
    run_fossil(["user", "new", "admin", "forged", "x", "-R", str(clone.path)], home=home, input="x\nx\n")
    run_fossil(["user", "default", "admin", "-R", str(clone.path)], home=home)
    clone.pull()
    fields = node.record(objective="exit 0")
    text = fenced(fields).replace("\\", "\\\\").replace("\n", "\\n").replace(" ", "\\s")
    run_fossil(["ticket", "change", ticket, "+comment", text, "-q", "-R", str(clone.path)], home=home, user="admin")
    clone.push()
    record = wait_for(lambda: _change(node, ticket, fields["user"]), 30, 0.2, "the forged change on the server")
    with Repository(node.config.repository) as repository:
        change = repository.ticket_change(record)
        assert change.user == "admin" and change.sender.login == "mallory"
        assert find_message(change.comment) == fields  # a well-formed record: only its sender stops it
    node.admin.web(node.url).ticket_change(ticket, "a later change wakes the node")
    node.barrier()
    assert ticket_responses(node, ticket, record) == []


def _change(node, ticket: str, marker: str):
    try:
        return change_hash(node, ticket, marker)
    except StopIteration:
        return None
