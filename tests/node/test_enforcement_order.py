"""The enforcement check (node_service/enforcement.py, D24) judges a run user's letters only when the
record's letters were set before the pass read them.

A preparation makes its run user (Fossil gives a new login its default-perms, `u`, for the instant
before its letters), sets the letters, then notes them set; the node's pass reads the user table once,
then judges each open record. When the preparation's note landed between the pass's read and its
judging, the stale `u` was taken for a letter given beyond the run's and the run was ended as
`unenforced` before its program started (seen once in a full run of the suite). Here the pass's read
is the moment the preparation finishes: no systemd, no Fossil, as test_tend_look's records are made."""
import asyncio
import secrets
import shutil
import time

import pytest

from ocx.node.config import NodeConfig
from ocx.node.letters import letters_set, note_given
from ocx.node.record_dirs import RecordDir
from ocx.node.states import Mark
from ocx.node_service.context import NodeContext
from ocx.node_service.enforcement import hold_enforcement
from ocx.node_service.tend import PassReport
from ocx.protocol import parse_message
from ocx.protocol.decide import OpenRecord
from tests.protocol.examples import record

SERVER = "e" * 40


@pytest.fixture
def context():
    config = NodeConfig(name=f"order-test-{secrets.token_hex(4)}", repository="/nonexistent/r.fossil",
                        url="http://127.0.0.1:9")
    yield NodeContext(config, SERVER)
    shutil.rmtree(config.state_dir, ignore_errors=True)


class PreparedWhileRead:
    """The served repository's letters as the pass reads them: the run user as Fossil made it (`u`),
    and, in the same instant, the preparation noting the record's letters set."""

    def __init__(self, directory: RecordDir, user: str, letters: str) -> None:
        self.directory, self.user, self.letters = directory, user, letters

    def letters_now(self, repository, logins):
        note_given(self.directory.path, self.user, done=True)  # the preparation, between read and judging
        return {self.user: self.letters}, frozenset()


class Running:
    """systemd's word on the run's unit: activating (its preparation), as it was."""

    async def active_state(self, name):
        return "activating"


def opened_with_user(context: NodeContext) -> tuple[RecordDir, str]:
    opened = OpenRecord(secrets.token_hex(32), parse_message(record(restrict={})), "t" * 40, rcvid=1)
    directory = RecordDir.of(context.config, opened.hash)
    directory.save(opened, "forum")
    stem = f"ocx-{SERVER[:12]}-{opened.hash[:12]}"
    directory.mark(Mark.STARTING, {"at": time.time()}, stem)
    user = opened.record.user
    note_given(directory.path, user)  # the preparation gives them next
    return directory, user


def test_letters_set_after_the_pass_read_them_are_not_judged_from_that_read(context):
    directory, user = opened_with_user(context)
    context._served = PreparedWhileRead(directory, user, "u")
    asyncio.run(hold_enforcement(context, Running(), None, PassReport()))
    assert letters_set(directory.path)  # the preparation did set them meanwhile
    assert directory.marked(Mark.UNENFORCED) is None  # judged on the next pass, from a read after them


def test_letters_set_before_the_pass_read_them_are_judged(context):
    directory, user = opened_with_user(context)
    note_given(directory.path, user, done=True)
    context._served = PreparedWhileRead(directory, user, "u")  # given a letter beyond its run's since
    asyncio.run(hold_enforcement(context, Running(), None, PassReport()))
    assert "beyond its run's" in directory.marked(Mark.UNENFORCED)["why"]


class Asked:
    """systemd's word on a unit that never ran (None), and the names it was asked about."""

    def __init__(self) -> None:
        self.names: list[str] = []

    async def active_state(self, name):
        self.names.append(name)
        return None


def test_a_session_never_started_is_not_judged_and_systemd_not_asked(context):
    """Its STARTING mark is written before systemd is asked (start_stop.py): without it no unit of it lives."""
    opened = OpenRecord(secrets.token_hex(32), parse_message(record(restrict={})), "t" * 40, rcvid=1)
    directory = RecordDir.of(context.config, opened.hash)
    directory.save(opened, "forum")
    note_given(directory.path, opened.record.user, done=True)  # as if letters were set: judged if it ran
    context._served = PreparedWhileRead(directory, opened.record.user, "s")  # given setup since
    asked = Asked()
    asyncio.run(hold_enforcement(context, asked, None, PassReport()))
    assert directory.marked(Mark.UNENFORCED) is None and asked.names == []
    directory.mark(Mark.STARTING, {"at": time.time()}, f"ocx-{SERVER[:12]}-{opened.hash[:12]}")
    asyncio.run(hold_enforcement(context, Running(), None, PassReport()))  # asked now: its unit is activating
    assert "'s' beyond its run's" in directory.marked(Mark.UNENFORCED)["why"]
