"""A pass's second tending sees the marks as they are after it read systemd's units (tend.py, record_store.look_again).

A run that ended while the pass read receipts: its stop step wrote `ended` (another process), then
systemd let its unit go. The pass had listed the record's marks before; tended again from that list,
the run looked started with its unit gone, and was answered `lost` (or, its unit kept as failed, its
end written a second time: StateError "a run ended cannot take 'ended'"). Here the marks and the
units are written by hand, as test_start_gate's are: no systemd, no Fossil."""
import asyncio
import json
import secrets
import shutil
import time

import pytest

from ocx.node.record_store import one_look
from ocx.node.config import NodeConfig
from ocx.node.record_dirs import RecordDir
from ocx.node.run_end import end_from_systemd
from ocx.node_service.context import NodeContext
from ocx.node_service.tend import PassReport, Tending, Units
from ocx.node.states import Mark, RunState
from ocx.protocol import parse_message
from ocx.protocol.decide import OpenRecord
from tests.protocol.examples import record

SERVER = "d" * 40


@pytest.fixture
def context():
    config = NodeConfig(name=f"look-test-{secrets.token_hex(4)}", repository="/nonexistent/r.fossil",
                        url="http://127.0.0.1:9")
    yield NodeContext(config, SERVER)
    shutil.rmtree(config.state_dir, ignore_errors=True)


def running(context: NodeContext) -> tuple[RecordDir, str]:
    opened = OpenRecord(secrets.token_hex(32), parse_message(record(restrict={})), "t" * 40, rcvid=1)
    directory = RecordDir.of(context.config, opened.hash)
    directory.save(opened, "forum")
    stem = f"ocx-{SERVER[:12]}-{opened.hash[:12]}"
    for mark in (Mark.STARTING, Mark.STARTED, Mark.PREPARED):
        directory.mark(mark, {"at": time.time()}, stem)
    return directory, stem


def ended_meanwhile(directory: RecordDir, stem: str) -> None:
    """Its stop step's mark, written by another process (the store's file, whole, under its name on disk)."""
    body = {"unit": f"{stem}.service", "at": time.time(), "system_stopping": False, "result": "success",
            "code": "exited", "status": "0"}
    (directory.path / f"ended-{stem}.json").write_text(json.dumps(body) + "\n")


def test_a_run_that_ended_between_two_tendings_of_one_pass_is_answered_from_its_end(context):
    directory, stem = running(context)
    with one_look():  # one pass
        assert directory.run_state(stem) is RunState.PREPARED  # the first tending's list: it runs
        ended_meanwhile(directory, stem)  # while the pass reads receipts
        tending = Tending(context, None, Units({}), PassReport())  # systemd let the unit go (exit 0)
        asyncio.run(tending.all())
    decided = directory.marked(Mark.ANSWERING)
    assert decided is not None and decided["outcome"] == "exited", decided  # never `lost`
    assert decided["note"].startswith("exit 0")


def test_an_end_kept_already_is_not_kept_again(context):
    """A step done is a no-op done again: systemd is not even asked (None here)."""
    directory, stem = running(context)
    ended_meanwhile(directory, stem)
    with one_look():
        kept = asyncio.run(end_from_systemd(None, directory, stem))
    assert kept is not None and kept["status"] == "0"
    assert directory.run_state(stem) is RunState.ENDED


@pytest.mark.parametrize("found, outcome", [({"refused_user": "user: 'x' holds capabilities 'gio' now (D40)"},
                                             "refused"),
                                            ({"unenforced": "run user x holds 'gio', not its run's (D24)"},
                                             "unenforced")])
def test_a_session_whose_preparation_found_letters_changed_is_answered_so(context, found, outcome):
    """node/letters.py: D40 again at a delayed start (the login left as it is), or D24."""
    directory, stem = running(context)
    (directory.path / f"prepared-{stem}.json").unlink()
    directory.mark(Mark.UNPREPARED, {"at": time.time(), "why": "LettersFound", "fault": False, **found}, stem)
    with one_look():
        asyncio.run(Tending(context, None, Units({}), PassReport()).all())  # its unit gone: it failed
    decided = directory.marked(Mark.ANSWERING)
    assert decided["outcome"] == outcome and decided["note"].startswith(next(iter(found.values()))), decided
    assert decided.get("untouched") is (True if outcome == "refused" else None)  # no letter of it withdrawn
