"""A receipt the node could not handle (intake.py; docs/node.md, 'Faults'): read again within a bound, never for ever,
never skipped, and a record it held answered once the node gives up, its note naming what failed."""
import errno
import secrets
import shutil
import time
from datetime import datetime, timezone

import pytest

from ocx.fossil.artifacts import Receipt
from ocx.node.config import NodeConfig
from ocx.node.record_dirs import RecordDir
from ocx.node_service.context import NodeContext
from ocx.node_service.intake import Failed, _retried
from ocx.node_service.respond import Target
from ocx.node_service.tend import PassReport
from ocx.node.states import MAX_ATTEMPTS, Mark, RecordState

RECORD = "a" * 64


@pytest.fixture
def context(tmp_path):
    config = NodeConfig(name=f"retry-test-{secrets.token_hex(4)}", repository=str(tmp_path / "r.fossil"),
                        url="http://127.0.0.1:9")
    yield NodeContext(config, "0" * 40)
    shutil.rmtree(config.state_dir, ignore_errors=True)


def receipt(rcvid: int = 7) -> Receipt:
    return Receipt(rcvid, "admin", None, datetime.now(timezone.utc), ())


def test_a_failing_receipt_is_tried_again_then_given_up_and_its_record_answered(context):
    target = Target(RECORD, "thread", RECORD, time.time(), 60)
    failed = [Failed(RECORD, ValueError("a bug meets this record"), target)]
    retry, report = {}, PassReport()
    for attempt in range(1, MAX_ATTEMPTS):
        retry = _retried(context, retry, 7, receipt(), failed, report)
        assert retry[7]["count"] == attempt  # kept: the next pass reads it again
    assert report.retry_in == 1.0
    retry = _retried(context, retry, 7, receipt(), failed, report)
    assert 7 not in retry  # never read for ever
    record_dir = RecordDir.of(context.config, RECORD)
    assert record_dir.state is RecordState.ANSWERING  # never silent: answered on the next pass
    decided = record_dir.marked(Mark.ANSWERING)
    assert decided["outcome"] == "refused"
    assert decided["note"] == "the node could not act on it: ValueError: a bug meets this record"
    assert decided["target"]["hash"] == RECORD


def test_a_fault_of_the_nodes_own_is_waited_out_and_answered_lost_only_after(context):
    target = Target(RECORD, "thread", RECORD, time.time(), 3600)
    failed = [Failed(RECORD, OSError(errno.ENOSPC, "No space left on device"), target)]
    retry, report = {}, PassReport()
    for _ in range(MAX_ATTEMPTS * 3):
        retry = _retried(context, retry, 7, receipt(), failed, report)
    assert retry[7]["count"] == MAX_ATTEMPTS * 3 and retry[7]["fault"]  # within the record's wall: kept
    assert not RecordDir.of(context.config, RECORD).path.exists()
    retry[7]["first"] -= 3700  # as if it had failed for more than the record's wall
    old = Receipt(7, "admin", None, datetime.fromtimestamp(time.time() - 3700, timezone.utc), ())
    stale = Target(RECORD, "thread", RECORD, time.time() - 3700, 3600)
    retry = _retried(context, retry, 7, old, [Failed(RECORD, OSError(errno.ENOSPC, "full"), stale)], report)
    assert 7 not in retry
    assert RecordDir.of(context.config, RECORD).marked(Mark.ANSWERING)["outcome"] == "lost"


def test_a_receipt_that_passes_is_dropped_from_the_list(context):
    retry = {7: {"count": 1, "first": time.time(), "error": "x", "fault": False}}
    assert _retried(context, retry, 7, receipt(), [], PassReport()) == {}
