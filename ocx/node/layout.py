"""Where a run lives: its unit's name (D3) and its workspace (D2, D16).

A record's workspace has two parts. The node's part, under the node's state
directory, holds what the node must trust (the record, the start mark, the
outcome, the inbox) and is never writable from inside the run. The run's
part is its HOME, systemd's StateDirectory for the unit, where its clone and
checkout are; systemd gives it to the run's dynamic user at start.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..protocol.hashes import short
from .config import RUNS_STATE_DIRECTORY, NodeConfig

SLICE = "ocx.slice"  # D3


def unit_stem(node: str, record: str, checkin: str | None = None) -> str:
    """`ocx-<node12>-<record12>[-<checkin12>]` (D3)."""
    stem = f"ocx-{short(node)}-{short(record)}"
    return f"{stem}-{short(checkin)}" if checkin else stem


def unit_name(node: str, record: str, checkin: str | None = None) -> str:
    return unit_stem(node, record, checkin) + ".service"


def parse_unit_name(name: str) -> tuple[str, str, str | None] | None:
    """(node12, record12, checkin12 or None) of an OCX run's unit, else None."""
    if not name.startswith("ocx-") or not name.endswith(".service"):
        return None
    parts = name[4 : -len(".service")].split("-")
    if len(parts) not in (2, 3) or any(len(p) != 12 for p in parts):
        return None
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


@dataclass(frozen=True)
class Workspace:
    config: NodeConfig
    record: str  # full hash
    stem: str

    @classmethod
    def of(cls, config: NodeConfig, node: str, record: str, checkin: str | None = None) -> "Workspace":
        return cls(config, record, unit_stem(node, record, checkin))

    # The node's part.
    @property
    def node_dir(self) -> Path:
        return self.config.state_dir / "records" / short(self.record)

    @property
    def record_file(self) -> Path:
        return self.node_dir / "record.json"

    @property
    def inbox(self) -> Path:
        return self.node_dir / "inbox"

    @property
    def outcome_file(self) -> Path:
        return self.node_dir / f"{self.stem}.outcome.json"

    @property
    def started_file(self) -> Path:
        return self.node_dir / f"{self.stem}.started"

    # The run's part.
    @property
    def state_directory(self) -> str:
        """StateDirectory= of the unit, relative to /var/lib."""
        return f"{RUNS_STATE_DIRECTORY}/{self.stem}"

    @property
    def home(self) -> Path:
        """Where the run sees its HOME (systemd links it to /var/lib/private)."""
        return Path("/var/lib") / self.state_directory

    @property
    def home_on_host(self) -> Path:
        """Where the node prepares it before start (DynamicUser keeps it private)."""
        return Path("/var/lib/private") / self.state_directory
