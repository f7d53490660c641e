"""The node's part of each record's workspace: what it must trust (D2, D5).

One directory per open record, under the node's state directory, never
writable from inside a run: the record as read from the repository, the
marks the node leaves before it acts (started, stop, cpu, unenforced,
answered) and the inbox of deliveries. Losing it loses nothing the
repository does not hold: `ocx node check` reads the open records again
(D6), and a run that is gone is answered `lost`.
"""
from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..protocol.decide import OpenRecord
from ..protocol.deliveries import Delivery
from ..protocol.messages import Record, parse_message
from ..files import write_atomically
from .config import NodeConfig

THREAD, TICKET = "thread", "ticket"  # D12: a record's place
_LOADED: dict[tuple[str, int], tuple[OpenRecord, str]] = {}



@contextmanager
def node_lock(config: NodeConfig):
    """One actor on a node's records at a time: the hook's pass, the check, a tool (D5)."""
    config.state_dir.mkdir(parents=True, exist_ok=True)
    with open(config.state_dir / "lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@dataclass(frozen=True)
class RecordDir:
    path: Path

    @classmethod
    def of(cls, config: NodeConfig, record_hash: str) -> "RecordDir":
        return cls(config.state_dir / "records" / record_hash)

    @property
    def hash(self) -> str:
        return self.path.name

    # -- the record ------------------------------------------------------
    def save(self, opened: OpenRecord, place_kind: str) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "inbox").mkdir(exist_ok=True)
        os.chmod(self.path / "inbox", 0o755)
        # issue 5 (tools): the run's tool socket appears here (ocx/tools/tool_socket.py); the unit binds it.
        self.tools.mkdir(exist_ok=True)
        os.chmod(self.tools, 0o755)
        body = {"hash": opened.hash, "place": opened.place, "place_kind": place_kind, "received": opened.received,
                "rcvid": opened.rcvid, "record": opened.record.model_dump(mode="json", exclude_none=True)}
        write_atomically(self.path / "record.json", json.dumps(body, indent=1) + "\n")

    def load(self) -> tuple[OpenRecord, str]:
        """The saved record; parsed once per version of its file, since every
        arrival reads every open record (intake.facts)."""
        path = self.path / "record.json"
        stamp = (str(path), path.stat().st_mtime_ns)
        if stamp not in _LOADED:
            _LOADED[stamp] = self._parse(path)
        return _LOADED[stamp]

    @staticmethod
    def _parse(path: Path) -> tuple[OpenRecord, str]:
        body = json.loads(path.read_text())
        record = parse_message(body["record"])
        assert isinstance(record, Record)
        opened = OpenRecord(body["hash"], record, body["place"], body["received"], body["rcvid"])
        return opened, body["place_kind"]

    def exists(self) -> bool:
        return (self.path / "record.json").exists()

    # -- marks -----------------------------------------------------------
    def mark(self, name: str, body: dict | None = None) -> None:
        write_atomically(self.path / f"{name}.json", json.dumps(body or {}) + "\n")

    def marked(self, name: str) -> dict | None:
        try:
            return json.loads((self.path / f"{name}.json").read_text())
        except FileNotFoundError:
            return None

    @property
    def answered(self) -> bool:
        return self.marked("answered") is not None

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
        sequence = 1 + max((int(n.split("-", 1)[0]) for n in names if n[:1].isdigit()), default=0)
        write_atomically(self.inbox / f"{sequence:08d}-{delivery.hash}.json", delivery.line())
        return True


def open_records(config: NodeConfig) -> list[RecordDir]:
    """The records this node holds open: saved, and not yet answered."""
    root = config.state_dir / "records"
    if not root.is_dir():
        return []
    found = [RecordDir(path) for path in sorted(root.iterdir()) if path.is_dir()]
    return [record for record in found if record.exists() and not record.answered]
