"""A record opened late hears what came after its receipt (intake.py's look back; docs/node.md, 'Faults').

A record whose receipt fails for a fault of the node's own (its server's node
not answering, say) waits on the retry list while the pass reads on: a
check-in on its branch, a post in its place or a stop for it, received after
it, is read while the record is not open yet. Once the record opens, each
must reach it, once, as if it had opened in time (D2: a pass reading again
from the start would give it them), on the served node and on a node
elsewhere (read_served_receipts), and after a pass cut off between the
record's opening and its mark.
"""
from __future__ import annotations

import asyncio
import json
import secrets
import shutil

import pytest

from ocx.fossil.repository import Repository
from ocx.node.config import NodeConfig
from ocx.node.record_dirs import RecordDir
from ocx.node.served import Here
from ocx.node_service.checkin_runs import queued
from ocx.node_service.context import NodeContext
from ocx.node_service.intake import read_receipts
from ocx.node_service.pass_mark import read_mark
from ocx.node_service.tend import PassReport
from ocx.node.states import Mark, RecordState

pytestmark = pytest.mark.fossil


class Unanswering(Here):
    """The served facts, but the record's question fails while FAILING > 0, as
    a node elsewhere's link does when the server's node does not answer in time."""

    failing = 0
    reading_fails = 0  # the same for the receipts read again

    def receipts(self, repository, since):
        if self.reading_fails > 0:
            self.reading_fails -= 1
            raise ConnectionError("the server's node did not answer")
        return super().receipts(repository, since)

    def answer(self, repository, place_kind, place, record_hash, **known):
        if self.failing > 0:
            self.failing -= 1
            raise ConnectionError("the server's node did not answer")
        return super().answer(repository, place_kind, place, record_hash, **known)


@pytest.fixture(params=[False, True], ids=["served", "elsewhere"])
def node(request, served):
    with served.repository() as repository:
        code, newest = repository.server_code, repository.max_rcvid()
    config = NodeConfig(name=f"look-back-{secrets.token_hex(4)}", repository=str(served.path),
                        url=served.base_url, elsewhere=request.param)
    context = NodeContext(config, code)
    context._served = Unanswering(config, elsewhere=request.param)
    config.state_dir.mkdir(parents=True)
    (config.state_dir / "mark.json").write_text(json.dumps({"rcvid": newest, "retry": {}}))  # earlier tests' read
    yield context
    shutil.rmtree(config.state_dir, ignore_errors=True)


def one_pass(context: NodeContext) -> PassReport:
    report = PassReport()
    with Repository(context.config.repository) as repository:
        asyncio.run(read_receipts(context, None, repository, report))
    return report


def post_record(served, context: NodeContext, **fields) -> str:
    record = {"ocx": 1, "kind": "record", "node": context.server_code, "user": f"run-{secrets.token_hex(4)}",
              "runner": "command", "command": ["true"], "objective": "build",
              "checkins": [], "hears": [], "remote": False,
              "restrict": {}, "sandbox": {"network": True, "read_only": [], "read_write": []},
              "budget": {"wall": "1h"}, **fields}
    record = {k: v for k, v in record.items() if v is not None}
    return served.web("admin").new_thread("a record", "A record.\n\n```json\n" + json.dumps(record) + "\n```\n")


def test_a_checkin_received_while_its_command_record_waits_on_a_retry_joins_its_queue_once(served, node):
    branch, other = f"lb-{secrets.token_hex(3)}", f"lb-{secrets.token_hex(3)}"
    record = post_record(served, node, checkins=[branch, other])
    node.served.failing = 1
    one_pass(node)  # the record's receipt fails; the pass reads on
    record_dir = RecordDir.of(node.config, record)
    assert not record_dir.exists() and read_mark(node)[1], "the record's receipt waits on the retry list"
    checkin = served.commit("bob", f"{branch}.txt", "x\n", branch=branch)
    node.served.failing = 1
    one_pass(node)  # the record's question fails again; the check-in is read while it is not open
    assert not record_dir.exists()
    one_pass(node)  # the record opens at last
    assert record_dir.state is RecordState.OPEN
    assert queued(record_dir) == [checkin]
    later = served.commit("bob", f"{other}.txt", "y\n", branch=other)
    one_pass(node)
    one_pass(node)  # read again: nothing twice
    assert queued(record_dir) == [checkin, later]  # D18: arrival order
    assert read_mark(node)[1] == {}


def test_a_checkin_is_queued_after_a_pass_cut_off_between_the_records_opening_and_its_mark(served, node):
    branch = f"lb-{secrets.token_hex(3)}"
    record = post_record(served, node, checkins=[branch])
    node.served.failing = 1
    one_pass(node)
    checkin = served.commit("bob", f"{branch}.txt", "x\n", branch=branch)
    node.served.failing = 1
    one_pass(node)  # the check-in is read while the record waits
    cut_mark = (node.config.state_dir / "mark.json").read_text()
    one_pass(node)  # opens it ...
    record_dir = RecordDir.of(node.config, record)
    assert record_dir.state is RecordState.OPEN
    # ... and is cut off (SIGKILL) before its queue and mark were kept: as the next pass finds it.
    shutil.rmtree(record_dir.path / "checkins", ignore_errors=True)
    (node.config.state_dir / "mark.json").write_text(cut_mark)
    one_pass(node)
    assert queued(record_dir) == [checkin]


def test_a_look_back_that_fails_keeps_the_records_receipt_to_be_read_again_and_the_queue_in_order(served, node):
    branch, other = f"lb-{secrets.token_hex(3)}", f"lb-{secrets.token_hex(3)}"
    record = post_record(served, node, checkins=[branch, other])
    node.served.failing = 1
    one_pass(node)
    checkin = served.commit("bob", f"{branch}.txt", "x\n", branch=branch)
    node.served.failing = 1
    one_pass(node)
    later = served.commit("bob", f"{other}.txt", "y\n", branch=other)  # read by the next pass's own reading
    node.served.reading_fails = 1
    one_pass(node)  # opens it, but cannot read what came after it: nor is it given the later one
    record_dir = RecordDir.of(node.config, record)
    assert record_dir.state is RecordState.OPEN and queued(record_dir) == []
    (kept,) = read_mark(node)[1].values()
    assert kept["count"] == 3 and kept["fault"] and "ConnectionError" in kept["error"]
    one_pass(node)
    assert queued(record_dir) == [checkin, later] and read_mark(node)[1] == {}  # D18: arrival order


def test_a_post_heard_and_a_stop_received_while_a_session_record_waits_reach_it_once_opened(served, node):
    served.clone("admin").write_wiki("sandbox/lookback", '```json\n{"command": ["/bin/true"]}\n```\n')
    record = post_record(served, node, runner="lookback", command=None, objective="wait", hears=["alice"])
    node.served.failing = 1
    one_pass(node)
    heard = served.web("alice").reply(record, "heard while the record waited")
    stop = {"ocx": 1, "kind": "stop", "node": node.server_code, "stops": record}
    served.web("admin").reply(record, "Stop.\n\n```json\n" + json.dumps(stop) + "\n```\n")
    node.served.failing = 1
    one_pass(node)
    one_pass(node)
    record_dir = RecordDir.of(node.config, record)
    assert record_dir.exists(), "opened"
    delivered = sorted(p.name for p in record_dir.inbox.iterdir())
    assert len(delivered) == 2 and delivered[1].endswith(f"-{heard}.json"), delivered  # its record, then the post
    assert (record_dir.marked(Mark.STOP) or {}).get("by") == "admin"
    one_pass(node)  # read again: nothing twice
    assert sorted(p.name for p in record_dir.inbox.iterdir()) == delivered
