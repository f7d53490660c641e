"""The last lines a unit's processes printed, from the journal (the only
place `journalctl` runs; journal.py writes, this reads).

What a run's program prints goes to the journal of its unit (D32); the
console shows an admin its last lines (docs/console.md, 'In work'). `journalctl` reads as
whoever runs it: the Fossil server's account reads the system journal by
its group `systemd-journal` (units/ocx-fossil@.service).
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from .errors import SystemdLayerError

JOURNALCTL = "/usr/bin/journalctl"
TIMEOUT_SECONDS = 5.0


class JournalUnreadable(SystemdLayerError):
    """The journal could not be read: why, for the page to say."""


@dataclass(frozen=True)
class Line:
    at: float  # Unix seconds
    text: str


def _text(message: object) -> str:
    # journald stores a line that is not UTF-8 as a list of byte values.
    if isinstance(message, list):
        return bytes(b for b in message if isinstance(b, int) and 0 <= b < 256).decode("utf-8", "replace")
    return message if isinstance(message, str) else ""


def printed(unit: str, lines: int = 40) -> list[Line]:
    """The last LINES lines UNIT's processes wrote to their standard output
    or error, oldest first."""
    argv = [JOURNALCTL, "--no-pager", "--quiet", "-o", "json", "--output-fields=MESSAGE", "-n", str(lines),
            f"_SYSTEMD_UNIT={unit}", "_TRANSPORT=stdout"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=TIMEOUT_SECONDS, env={"LANG": "C.UTF-8"})
    except (OSError, subprocess.TimeoutExpired) as error:
        raise JournalUnreadable(f"journalctl: {error}") from None
    if done.returncode != 0:
        raise JournalUnreadable(f"journalctl exited {done.returncode}: "
                                f"{done.stderr.decode('utf-8', 'replace').strip()[:300]}")
    found = []
    for raw in done.stdout.splitlines():
        try:
            entry = json.loads(raw)
            at = int(entry.get("__REALTIME_TIMESTAMP", "0")) / 1_000_000
        except (ValueError, TypeError, AttributeError):
            continue
        found.append(Line(at, _text(entry.get("MESSAGE"))))
    return found[-lines:]
