"""Where a run lives: its unit's name (D3) and its workspace (D2, D16).

A record's workspace has two parts. The node's part (record_dirs.py), under the
node's state directory, holds what the node must trust and is never writable
from inside the run. The run's part is its HOME, below.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple  # not dataclasses: a run's preparation imports this (fossil/program.py)

from ..protocol.hashes import short
from .host_paths import RUNS_STATE_DIRECTORY  # not .config: it imports pydantic (docs/node.md, 'The readers')

TOOLS_INSIDE = "/run/ocx-tools"  # where a run sees its tool socket's directory (D22, D34)

# D22: after its first sync Fossil keeps only the sync secret in the
# clone (seen on 2.21), and the web forms the tools write through need the
# password itself: a run that may hold its password holds it here too, 0600.
PASSWORD_FILE = ".ocx-password"

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


class RunHome(NamedTuple):
    """The run's own part of its workspace: its HOME, clone and checkout (D16).

    systemd's StateDirectory for the unit: the node prepares it on the host
    before start, and DynamicUser gives it to the run's user at start.
    """

    stem: str

    @property
    def state_directory(self) -> str:
        """StateDirectory= of the unit, relative to /var/lib."""
        return f"{RUNS_STATE_DIRECTORY}/{self.stem}"

    @property
    def inside(self) -> Path:
        """The path the run sees (systemd links it into /var/lib/private)."""
        return Path("/var/lib") / self.state_directory

    @property
    def runtime_directory(self) -> str:
        """RuntimeDirectory= of a session's unit, relative to /run: its
        terminal's socket (D32). systemd makes it the run's own and removes it
        when the unit ends; with mode 0700 other runs cannot reach it, root can."""
        return f"{RUNS_STATE_DIRECTORY}/{self.stem}"

    @property
    def terminal_socket(self) -> Path:
        """The same path inside the unit and on the host."""
        return Path("/run") / self.runtime_directory / "terminal.sock"

    @property
    def on_host(self) -> Path:
        """Where the node prepares it (DynamicUser keeps /var/lib/private 0700)."""
        return Path("/var/lib/private") / self.state_directory
