"""`python -m ocx.node.wake NAME`: the path unit's service, a poke and nothing else (D26).

A path unit does not fire again while the unit it starts is still running,
so it must not start the node's service itself: a change that came as that
service was exiting would wait for the next one. It starts this instead,
which lives for a few milliseconds and leaves a connection queued on the
node's socket; systemd then starts the node's service for it, or the
running one reads it before it exits. Standard library only.
"""
from __future__ import annotations

import sys

from .ended import poke

if __name__ == "__main__":
    sys.exit(0 if len(sys.argv) == 2 and poke(sys.argv[1], "changed") else 1)
