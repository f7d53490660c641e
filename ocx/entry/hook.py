"""`ocx hook REPOSITORY`: Fossil's after-receive hook (C3, D5, D26, D27).

It runs as the repository file's owner, from Fossil's backoffice, with the
received artifacts on standard input. It hands them to the node's root
service through the node's socket and returns at once: the service reads
the repository and decides. Standard library only, since its start-up is
all its cost; it never fails Fossil (whose exit code Fossil ignores anyway).
"""
from __future__ import annotations

import json
import os
import sys

from ..node.host_paths import CONFIG_DIR
from ..node.wake import poke

TYPE_CHECKING = False  # typing's own costs an import too; mypy takes any TYPE_CHECKING as true
if TYPE_CHECKING:
    from typing import TextIO


def node_of(repository: str, config_dir: str = CONFIG_DIR) -> str | None:
    """The node whose configuration names this repository file."""
    wanted = os.path.realpath(repository)
    try:
        names = sorted(os.listdir(config_dir))
    except OSError:
        return None
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(config_dir, name)) as handle:
                config = json.load(handle)
        except (OSError, ValueError):
            continue
        if os.path.realpath(config.get("repository", "")) == wanted:
            node: str | None = config.get("name")
            return node
    return None


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
