"""The last lines a unit's processes printed, from the journal (the only
place `journalctl` runs; journal.py writes, this reads).

What a run's program prints goes to the journal of its unit (D32); the
console shows an admin its last lines (docs/console.md, 'In work'). `journalctl` reads as
whoever runs it: the Fossil server's account reads the system journal by
its group `systemd-journal` (units/ocx-fossil@.service).
"""
from __future__ import annotations

import json
import re
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


_REQUESTED = re.compile(r"[^ ]+\.service: Sent signal (SIG[A-Z0-9+-]{1,12}) to main process [0-9]+ \(.*\) "
                        r"on client request\.")
INVOCATION = re.compile(r"[0-9a-f]{32}")


def requested_signal(unit: str, invocation: str) -> str | None:
    """The last signal PID 1 sent UNIT's main process, in the invocation INVOCATION (its INVOCATION_ID),
    because a client asked (KillUnit: `machinectl kill`, `systemctl kill`; D4), or None. Only PID 1's own
    lines count (_PID and _UID are the journal's, not the sender's to say), so a run cannot write one.
    The journal is synced first: PID 1 logs before it signals, and journald writes when it gets to it."""
    if not INVOCATION.fullmatch(invocation) or "=" in unit:
        return None
    try:
        subprocess.run([JOURNALCTL, "--sync"], capture_output=True, timeout=TIMEOUT_SECONDS)
        done = subprocess.run([JOURNALCTL, "--no-pager", "--quiet", "-o", "json", "--output-fields=MESSAGE",
                               "-n", "50", "_PID=1", "_UID=0", "_TRANSPORT=journal", f"UNIT={unit}",
                               f"INVOCATION_ID={invocation}"], capture_output=True, timeout=TIMEOUT_SECONDS,
                              env={"LANG": "C.UTF-8"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = None
    for raw in done.stdout.splitlines():
        try:
            message = _text(json.loads(raw).get("MESSAGE"))
        except (ValueError, AttributeError):
            continue
        if (matched := _REQUESTED.fullmatch(message)) is not None and message.startswith(f"{unit}: "):
            found = matched.group(1)
    return found
