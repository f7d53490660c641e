"""The node's part of each record's workspace: what it must trust (D2, D5).

One directory per open record, under the node's state directory, never
writable from inside a run: the record as read from the repository, the
marks of its life (states.py's table, written only through
record_store.RecordStore, which RecordDir is) and the inbox of deliveries.
Losing it loses nothing the repository does not hold: `ocx node check`
reads the open records again (D6), and a run that is gone is answered
`lost`. Once the record is answered, its directory is removed (cleanup.py):
the repository says it was answered.
"""
from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..files import StampedReads, write_atomically
from ..protocol.decide import OpenRecord
from ..protocol.deliveries import Delivery
from ..protocol.messages import Record, parse_message
from ..protocol.numerals import is_digits
from .config import NodeConfig
from .record_store import RecordStore, saved_in_look
from .states import Mark, RecordState, acting, record_state

THREAD, TICKET = "thread", "ticket"  # D12: a record's place


# Each record's saved body, parsed, by its directory: a pass reads every record several times, and a burst's
# pass hundreds (docs/node.md, 'Measured'). Records come and go: each listing of the records forgets those gone
# since the last (record_dirs). (Kept until AT_MOST, a long day's 2,000 records grew the node's memory by some
# MiB: docs/node.md, 'Cores, a long day'.)
ParsedRecords = StampedReads


_PARSED = ParsedRecords()


@contextmanager
def node_lock(config: NodeConfig) -> Iterator[None]:
    """One actor on a node's records at a time: the hook's pass, the check, a tool (D5)."""
    config.state_dir.mkdir(parents=True, exist_ok=True)
    with open(config.state_dir / "lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


class RecordDir(RecordStore):
    """The node's record store (record_store.py) with what it keeps beside the marks: the record's
    body, parsed; its inbox; its tool socket's directory."""

    __slots__ = ()  # a record store's one field, its path

    @classmethod
    def of(cls, config: NodeConfig, record_hash: str) -> RecordDir:
        return cls(config.state_dir / "records" / record_hash)

    # -- the record ------------------------------------------------------
    def save(self, opened: OpenRecord, place_kind: str, first: Delivery | None = None) -> None:
        """The record as read, admitted (the RECORD mark, written last: a record
        saved has its FIRST delivery in its inbox, before anything that comes later)."""
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "inbox").mkdir(exist_ok=True)
        os.chmod(self.path / "inbox", 0o755)
        if first is not None:
            self.deliver(first)
        # D22: the run's tool socket appears here (ocx/tool_service/tool_socket.py); the unit binds it.
        self.tools.mkdir(exist_ok=True)
        os.chmod(self.tools, 0o755)
        body = {"hash": opened.hash, "place": opened.place, "place_kind": place_kind, "received": opened.received,
                "rcvid": opened.rcvid, "record": opened.record.model_dump(mode="json", exclude_none=True)}
        self.mark(Mark.RECORD, json.dumps(body, indent=1) + "\n")

    def load(self) -> tuple[OpenRecord, str]:
        """The saved record; parsed once per version of its file (its stamp), since every
        arrival reads every open record (intake.facts), and looked at once within a pass's look
        (record_store.one_look)."""
        key = str(self.path)
        look = saved_in_look()
        if look is not None and key in look:
            loaded: tuple[OpenRecord, str] = look[key]
            return loaded
        loaded = _PARSED.read(key, self.saved_file(), self._parse)
        if look is not None:
            look[key] = loaded
        return loaded

    @staticmethod
    def _parse(path: Path) -> tuple[OpenRecord, str]:
        body = json.loads(path.read_text())
        record = parse_message(body["record"])
        assert isinstance(record, Record)
        opened = OpenRecord(body["hash"], record, body["place"], body["received"], body["rcvid"])
        return opened, body["place_kind"]

    def exists(self) -> bool:
        return self.saved_file().exists()

    def mark(self, mark: Mark, body: dict[str, Any] | str | None = None, stem: str | None = None) -> None:
        """The store's change (RecordStore.mark), in a directory made first for a record never saved."""
        if mark is not Mark.RECORD and not self.path.is_dir():
            self.path.mkdir(parents=True)  # a refusal of a record never saved (states.RECORD_CHANGES)
        super().mark(mark, body, stem)

    @property
    def tools(self) -> Path:
        """Where the node serves a no_password run's tool socket (D22, D34)."""
        return self.path / "tools"

    # -- the inbox (D13) -------------------------------------------------
    @property
    def inbox(self) -> Path:
        return self.path / "inbox"

    def deliver(self, delivery: Delivery) -> bool:
        """Drop DELIVERY into the inbox once; False if it was there already (D5)."""
        names = sorted(os.listdir(self.inbox))
        if any(name.endswith(f"-{delivery.hash}.json") for name in names):
            return False
        sequence = 1 + max((int(n.split("-", 1)[0]) for n in names if is_digits(n[:1])), default=0)
        write_atomically(self.inbox / f"{sequence:08d}-{delivery.hash}.json", delivery.line())
        return True


# The records listed last, by the records' root, then by name: a RecordDir is its path alone, and making a path
# for each record of each listing was a tenth of a burst's pass. Only those listed last are kept.
_LISTED: dict[str, dict[str, RecordDir]] = {}


def record_dirs(config: NodeConfig) -> list[RecordDir]:
    """Every record directory of the node, in any state (a name with a dot is one being removed)."""
    root = config.state_dir / "records"
    try:
        with os.scandir(root) as entries:  # the kind from the listing: no stat each
            names = [entry.name for entry in entries if entry.is_dir(follow_symlinks=False)
                     and not entry.name.startswith(".")]
    except (FileNotFoundError, NotADirectoryError):
        return []
    if len(_LISTED) > 16 and str(root) not in _LISTED:  # one root a node; tests make many
        _LISTED.clear()
    before = _LISTED.get(str(root), {})
    now = {name: before.get(name) or RecordDir(root / name) for name in sorted(names)}
    _LISTED[str(root)] = now
    _PARSED.forget(str(gone.path) for name, gone in before.items() if name not in now)  # answered, removed
    return list(now.values())


def open_state(record: RecordDir) -> RecordState | None:
    """The record's state if it is open (saved, not yet answered), else None: one listing of its directory."""
    own = record.present()[0]
    state = record_state(own)
    return state if Mark.RECORD in own and state is not RecordState.ANSWERED else None


def _open_with_states(config: NodeConfig) -> list[tuple[RecordDir, RecordState]]:
    """Each open record with its state: a pass and each admission read them all (a burst of
    records: docs/node.md, 'Measured')."""
    return [(record, state) for record in record_dirs(config) if (state := open_state(record)) is not None]


def open_records(config: NodeConfig) -> list[RecordDir]:
    """The records this node holds open: saved, and not yet answered."""
    return [record for record, _ in _open_with_states(config)]


def acting_records(config: NodeConfig) -> list[RecordDir]:
    """Open records that arrivals still reach: not those whose answer is decided (states.acting)."""
    return [record for record, state in _open_with_states(config) if acting(state)]
