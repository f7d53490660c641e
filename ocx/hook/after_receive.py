"""`ocx hook REPOSITORY`: Fossil's after-receive hook (C3, D5, D26, D27).

It runs as the repository file's owner, from Fossil's backoffice, with the
received artifacts on standard input. It hands them to the node's root
service through the node's socket and returns at once: the service reads
the repository and decides. Standard library only, since its start-up is
all its cost; it never fails Fossil (whose exit code Fossil ignores anyway).
"""
from __future__ import annotations

import sys

from ..node.host_paths import node_of
from ..node.wake import poke

TYPE_CHECKING = False  # typing's own costs an import too; mypy takes any TYPE_CHECKING as true
if TYPE_CHECKING:
    from typing import TextIO


def main(argv: list[str], stdin: TextIO = sys.stdin) -> int:
    lines = stdin.read() if not stdin.isatty() else ""
    node = node_of(argv[0]) if argv else None
    if node is None:
        print(f"ocx hook: no node is configured for {argv[0] if argv else '(no repository)'}", file=sys.stderr)
        return 0
    error = poke(node, "hook\n" + lines)
    if error is not None:
        print(f"ocx hook: node {node} not reachable: {error}", file=sys.stderr)
    return 0
