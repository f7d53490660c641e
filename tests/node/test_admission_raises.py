"""The node's admission raises Inadmissible, naming the field, and nothing
else counts as the record's refusal: a refusal of the server's node (a node
elsewhere asking it, D37) is a failure the pass tries again (C4)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from ocx.node.server_link import ServerRefused
from ocx.node.admit import admission
from ocx.protocol import parse_message
from ocx.protocol.admission import Inadmissible

from tests.protocol.examples import ci_record

CONFIG = SimpleNamespace(node_user="ocx-node", own_paths=lambda: [])


class Served:
    """What only the served repository knows, as a node elsewhere is told it (node/served.py)."""

    def __init__(self, letters: str | None = None, refuses: bool = False):
        self._letters, self.refuses = letters, refuses

    def runner_page(self, repository, name):
        return None

    def letters(self, repository, login):
        if self.refuses:
            raise ServerRefused("caller", "the server's node took no such question")
        return self._letters

    def works_for(self, repository, login):
        return None


def admit(obj: dict, served: Served):
    return admission(None, CONFIG, "e1aacf6153", parse_message(obj), open_now=[], served=served)


def test_a_record_that_passes_is_admitted_with_its_page():
    assert admit(ci_record(), Served()) is None  # a command record has no runner page


def test_a_record_this_node_cannot_run_is_refused_naming_the_field():
    with pytest.raises(Inadmissible) as refused:
        admit(ci_record(user="nobody"), Served())
    assert refused.value.field == "user" and str(refused.value).startswith("user: 'nobody' is one of Fossil's")
    with pytest.raises(Inadmissible) as holds:
        admit(ci_record(), Served(letters="i"))
    assert holds.value.field == "user" and "D40" in holds.value.why


def test_the_servers_refusal_is_no_refusal_of_the_record():
    with pytest.raises(ServerRefused) as raised:
        admit(ci_record(), Served(refuses=True))
    assert not isinstance(raised.value, Inadmissible)  # intake.admit lets it through: tried again, not answered
