"""Named points where the node's service can be cut off on purpose (C4, D6: every step can be cut
anywhere and found again).

An operator (or a test) writes `POINT RECORD` into /run/ocx-cut/NAME, as
root; the next time node NAME passes POINT for that record (or for any,
with `POINT` alone), it removes the file and kills itself with SIGKILL, as
a crash or the kernel's OOM killer would. systemd restarts it
(Restart=on-failure) and its next pass must finish what it was doing:
docs/node.md lists the points, tests/node_system/test_cuts.py cuts at each.
Costs one failed open() per point when no cut is asked for. Standard library only.
"""
from __future__ import annotations

import os
import signal

CUT_ROOT = "/run/ocx-cut"
POINTS = ("receipt", "starting", "watched", "started", "answering", "responded", "withdrawn", "removing", "judging",
          "tagged")


def cut_here(node: str, point: str, record: str = "") -> None:
    path = os.path.join(CUT_ROOT, node)
    try:
        with open(path) as asked:
            wanted = asked.read().split()
    except OSError:
        return
    if not wanted or wanted[0] != point or (len(wanted) > 1 and wanted[1] != record):
        return
    os.unlink(path)
    os.kill(os.getpid(), signal.SIGKILL)
