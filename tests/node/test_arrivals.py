"""What the node's pass reads of each artifact (node/arrivals.py), on a real
repository: a run of receipts with a few queries for all, and an old post's
text only where decide could act on it (decide.may_act), with the same
decisions as reading all."""
from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from ocx.node.arrivals import ReceiptReader
from ocx.protocol.decide import CHECKIN, Deliver, Ignore, NodeFacts, OpenRecord, decide
from ocx.protocol.messages import parse_message

pytestmark = pytest.mark.fossil


def test_a_post_is_read_only_where_it_can_matter_and_decided_alike(served) -> None:
    with served.repository() as repository:
        node = repository.server_code
    record = {"ocx": 1, "kind": "record", "node": node, "user": "run-abc123", "runner": "claude", "objective": "x",
              "checkins": ["trunk"], "hears": ["alice"], "remote": False, "restrict": {},
              "sandbox": {"network": True, "read_only": [], "read_write": []}, "budget": {"wall": "1h"}}
    alice, admin = served.web("alice"), served.web("admin")
    chatter = alice.new_thread("chatter", "no message here")
    message = admin.new_thread("a record", "A record.\n\n```json\n" + json.dumps(record) + "\n```\n")
    heard = alice.reply(message, "in an open record's place")
    checkin = served.commit("bob", "arrivals.txt", "x\n")
    tag = served.clone("bob").tag(checkin, "audited", "pass: fine (against PLAN.md)")
    with served.repository() as repository:
        receipts = repository.receipts_since(0)
        stored = {a.hash: (r, a) for r in receipts for a in r.artifacts}
        # As a pass after a lost mark reads them: received long ago.
        old = {h: (replace(r, time=r.time - timedelta(days=30)), a) for h, (r, a) in stored.items()}
        opened = OpenRecord(message, parse_message(record), message, rcvid=stored[message][0].rcvid)
        facts = NodeFacts(node, "ocx-node", (opened,))
        reader = ReceiptReader(repository, receipts)
        came = {h: reader.arrival(*old[h], facts) for h in (chatter, message, heard, checkin, tag)}
        assert came[tag] is None  # a tag change is neither message nor delivery
        assert came[chatter] is None  # alice may send no message that counts, and not in an open place: not read
        assert came[message].text == repository.post(message).body  # an admin's: it may be a record
        assert came[heard].text == "in an open record's place" and came[heard].place == message  # a delivery (D12)
        assert [type(a) for a in decide(came[heard], facts)] == [Deliver]
        assert (came[checkin].kind, came[checkin].branch) == (CHECKIN, repository.checkin(checkin).branch)
        assert came[message].sender_capabilities == repository.effective_capabilities("admin")
        # Read whole, what was left unread would have done nothing.
        whole = reader.arrival(*old[chatter])
        assert whole.text == "no message here" and all(isinstance(a, Ignore) for a in decide(whole, facts))
        # Recent, everything is read, so that why it did nothing is logged.
        assert reader.arrival(*stored[chatter], facts).text == "no message here"
        # A pass lists only receipts that can hold a message or a delivery.
        listed = {a.hash for r in repository.receipts_since(0, kinds=("f", "t", "ci"), untyped_after=0.0)
                  for a in r.artifacts}
        assert {chatter, message, heard, checkin} <= listed and tag not in listed
