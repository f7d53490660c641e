"""At most STARTS_AT_ONCE runs' units prepare at once, and sessions start in the order their records
came (tend.py; docs/node.md, 'The node starts as many units as there are turns'). Decided from the
record's marks and systemd's list of units; here both are
written by hand, and no start reaches systemd (there is none: a start that tried would fail)."""
import asyncio
import secrets
import shutil

import pytest

from ocx.node.config import NodeConfig
from ocx.node.record_dirs import RecordDir
from ocx.node_service.context import NodeContext
from ocx.node_service.tend import (START_AGAIN_SECONDS, STARTS_AT_ONCE, PassReport, Tending, Units, _preparing,
    _received_order)
from ocx.node.states import Mark
from ocx.protocol import parse_message
from ocx.protocol.decide import OpenRecord
from ocx.systemd.manager import ListedUnit
from tests.protocol.examples import record

SERVER = "c" * 40


@pytest.fixture
def context():
    config = NodeConfig(name=f"gate-test-{secrets.token_hex(4)}", repository="/nonexistent/r.fossil",
                        url="http://127.0.0.1:9")
    yield NodeContext(config, SERVER)
    shutil.rmtree(config.state_dir, ignore_errors=True)


def saved(context: NodeContext, rcvid: int, network: bool = True) -> tuple[RecordDir, OpenRecord]:
    message = record(restrict={}, sandbox={"network": network, "read_only": [], "read_write": []})
    opened = OpenRecord(secrets.token_hex(32), parse_message(message), "t" * 40, rcvid=rcvid)
    directory = RecordDir.of(context.config, opened.hash)
    directory.save(opened, "forum")
    return directory, opened


def stem(opened: OpenRecord) -> str:
    return f"ocx-{SERVER[:12]}-{opened.hash[:12]}"


def listed(name: str, state: str, job: str = "") -> ListedUnit:
    return ListedUnit(name, state, "start-pre" if state == "activating" else state, "", job=job)


def test_a_run_prepares_from_its_start_until_its_mark_says_it_is_done(context):
    directory, opened = saved(context, 1)
    unit = f"{stem(opened)}.service"
    directory.mark(Mark.STARTING, {"at": 0}, stem(opened))
    assert _preparing(directory, Units({unit: listed(unit, "inactive", job="start")})) == 1  # its job queued
    assert _preparing(directory, Units({unit: listed(unit, "activating")})) == 1
    directory.mark(Mark.PREPARED, {"at": 0}, stem(opened))  # written, then the node poked: systemd lags
    assert _preparing(directory, Units({unit: listed(unit, "activating")})) == 0
    other, later = saved(context, 2)
    other.mark(Mark.STARTING, {"at": 0}, stem(later))
    assert _preparing(other, Units({})) == 0  # never reached systemd: tend starts it again (D5)
    assert _preparing(other, Units({f"{stem(later)}.service": listed("x", "active")})) == 0


def test_sessions_are_tended_in_the_order_their_records_came(context):
    made = [saved(context, rcvid)[0] for rcvid in (30, 10, 20)]
    assert [_received_order(d) for d in sorted(made, key=_received_order)] == [10, 20, 30]
    half = RecordDir.of(context.config, "f" * 64)
    half.path.mkdir(parents=True)  # half-saved: no record.json yet
    assert _received_order(half) == 0


def test_no_session_starts_while_as_many_prepare_as_may(context):
    directory, opened = saved(context, 1)
    tending = Tending(context, None, Units({}), PassReport())
    tending.starts_left = 0
    asyncio.run(tending.start(directory, opened))  # a start would ask the repository and systemd (None)
    assert tending.report.actions == [] and tending.report.retry_in == START_AGAIN_SECONDS
    assert directory.run_state(stem(opened)).value == "none"  # nothing of it written: the next pass starts it


def test_the_passes_count_starts_from_what_prepares_now(context):
    runs = [saved(context, rcvid) for rcvid in range(1, STARTS_AT_ONCE + 2)]
    units = {}
    for directory, opened in runs[:STARTS_AT_ONCE]:
        directory.mark(Mark.STARTING, {"at": 0}, stem(opened))
        units[f"{stem(opened)}.service"] = listed(f"{stem(opened)}.service", "activating")
    tending = Tending(context, None, Units(units), PassReport())
    asyncio.run(tending.all())  # the one left waits: every turn is held
    assert tending.starts_left == 0 and tending.report.retry_in == START_AGAIN_SECONDS
    assert tending.waiting_to_start == 1
    assert runs[-1][0].run_state(stem(runs[-1][1])).value == "none"
