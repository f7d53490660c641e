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


def preparing(directory: RecordDir, units: Units) -> int:
    """_preparing as Tending.all asks it: with the stems systemd starts of this record's units."""
    return _preparing(directory, units.starting_by_record().get(f"ocx-{SERVER[:12]}-{directory.hash[:12]}", []))


def test_a_run_prepares_from_its_start_until_its_mark_says_it_is_done(context):
    directory, opened = saved(context, 1)
    unit = f"{stem(opened)}.service"
    directory.mark(Mark.STARTING, {"at": 0}, stem(opened))
    assert preparing(directory, Units({unit: listed(unit, "inactive", job="start")})) == 1  # its job queued
    assert preparing(directory, Units({unit: listed(unit, "activating")})) == 1
    directory.mark(Mark.PREPARED, {"at": 0}, stem(opened))  # written, then the node poked: systemd lags
    assert preparing(directory, Units({unit: listed(unit, "activating")})) == 0
    other, later = saved(context, 2)
    other.mark(Mark.STARTING, {"at": 0}, stem(later))
    assert preparing(other, Units({})) == 0  # never reached systemd: tend starts it again (D5)
    assert preparing(other, Units({f"{stem(later)}.service": listed("x", "active")})) == 0
    gone, _ = saved(context, 3)  # a unit starting whose record has no mark of it (its directory made again)
    assert preparing(gone, Units({f"ocx-{SERVER[:12]}-{gone.hash[:12]}.service": listed("x", "activating")})) == 0


def test_units_starting_are_found_by_their_records_stem_check_in_runs_too():
    record, checkin = "1" * 12, "2" * 12
    units = Units({f"ocx-{SERVER[:12]}-{record}.service": listed("a", "activating"),
                   f"ocx-{SERVER[:12]}-{record}-{checkin}.service": listed("b", "inactive", job="start"),
                   f"ocx-{SERVER[:12]}-{'3' * 12}.service": listed("c", "active"),
                   "ocx-node@x.service": listed("d", "activating")})
    assert units.starting_by_record() == {f"ocx-{SERVER[:12]}-{record}": [f"ocx-{SERVER[:12]}-{record}",
                                                                          f"ocx-{SERVER[:12]}-{record}-{checkin}"]}


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


def test_a_pass_report_keeps_the_records_acted_on_or_says_any():
    report = PassReport()
    report.acted_on("a" * 64)
    report.acted_on("b" * 64)
    assert report.touched == {"a" * 64, "b" * 64}
    report.acted_on(None)  # an action on no record of its own: every record is looked at again
    report.acted_on("c" * 64)
    assert report.touched is None


def test_a_second_look_tends_only_what_the_pass_acted_on_and_overtakes_no_session_left_waiting(context):
    """The first look leaves the oldest session waiting (every turn held); a turn frees before the second
    look, which is given only a record just admitted: that one waits too, behind the older one, and the
    older is left to the next pass (its preparation's poke), not tended twice in this one."""
    runs = [saved(context, rcvid) for rcvid in range(1, STARTS_AT_ONCE + 1)]
    units = {}
    for directory, opened in runs:
        directory.mark(Mark.STARTING, {"at": 0}, stem(opened))
        units[f"{stem(opened)}.service"] = listed(f"{stem(opened)}.service", "activating")
    older, _ = saved(context, 100)
    tending = Tending(context, None, Units(units), PassReport())
    asyncio.run(tending.all())
    assert tending.waiting_to_start == 1
    runs[0][0].mark(Mark.PREPARED, {"at": 0}, stem(runs[0][1]))  # a turn freed meanwhile
    newer, opened = saved(context, 200)
    tending.report.acted_on(newer.hash)
    asyncio.run(tending.all(only=tending.report.touched))
    assert tending.starts_left == 0 and tending.waiting_to_start == 1  # the newer only, held behind the older
    assert newer.run_state(stem(opened)).value == "none" and tending.report.actions == []
