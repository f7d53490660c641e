"""Whose fault a failure is: the node's own, or the record's (C4; docs/node.md, 'Faults').

The node's own faults pass: its Fossil server down or restarting, a busy
repository, a D-Bus call that timed out, a full disk. A record is never
answered `refused` for one: the step is tried again within the record's
wall (states.Failure), and only then is the record answered `lost`.
`refused` stays for what the node cannot hold. Anything else that fails
the same way states.MAX_ATTEMPTS times is taken as the record's own.
Each layer says which of its own errors pass, by their types (fossil/faults.py, systemd/errors.py).
"""
from __future__ import annotations

import errno
import sys

_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EAGAIN, errno.EMFILE, errno.ENFILE,
                errno.ENOMEM}


def is_node_fault(error: BaseException | None) -> bool:
    """Whether ERROR (or what caused it) is a fault of the node's own that may pass."""
    from ..fossil import faults as fossil_faults
    from ..systemd import errors as systemd_faults  # its errors only: dbus-next stays unloaded

    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        # asyncio.TimeoutError is TimeoutError (3.11); urllib's errors are looked for only where urllib
        # was loaded: a run's privileged steps import neither (their start is waited for: docs/node.md, 'Measured').
        web = sys.modules.get("urllib.error")
        if isinstance(error, (ConnectionError, TimeoutError, EOFError)) or (web and isinstance(error, web.URLError)):
            return True
        if isinstance(error, OSError) and error.errno in _DISK_ERRNOS:
            return True
        said = fossil_faults.passes(error)
        if said is None:
            said = systemd_faults.passes(error)
        if said is not None:
            return said
        error = error.__cause__ or error.__context__
    return False


def describe(error: BaseException) -> str:
    """One line naming what failed, for a note or the journal (never a password: errors do not carry one)."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]
