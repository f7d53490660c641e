"""`status`: who and where the caller is, and what this node enforces (Part 4, D24, D17)."""
from __future__ import annotations

from datetime import UTC
from typing import Any

from pydantic import BaseModel, Field

from ..protocol.admission import ENFORCED_RESTRICTIONS
from .caller import Caller
from .framework import ANYONE, Act, Tool, ToolInput


class StatusInput(ToolInput):
    pass


class RunFacts(BaseModel):
    record: str = Field(description="The record's full hash.")
    place: str = Field(description="Its place: the thread's root post, or the ticket (D12).")
    restrict: dict[str, Any] = Field(description="Its restrict, as written (C6).")


class NodeFacts(BaseModel):
    name: str = Field(description="The node's name: its units' instance on its host.")
    server_code: str | None = Field(description="Its server-code: what records name it by (C1).")
    node_user: str = Field(description="The login it writes as (D20, D37).")
    enforces: list[str] = Field(description="The restrictions of C6 it holds runs to (D24).")
    here: bool = Field(description="Whether it is the server's own node (D29).")
    heard: str | None = Field(description="When it last asked the server's node anything (UTC), if ever; "
                                          "the server's own node: null.")
    release: str | None = Field(None, description=(
        "The release it last accepted or rolled back to, CHECKIN16-DIGEST16, as its node user's last such post "
        "in its releases thread says (D46, D48); null when it posted none."))


class StatusResult(BaseModel):
    login: str = Field(description="The caller's Fossil login.")
    capabilities: str = Field(description="The letters Fossil gives the caller when it acts, read on the node.")
    repository: str = Field(description="The served repository's URL, as the caller reached it.")
    node: str = Field(description="This node's server-code (C1): the served repository's, never a clone's.")
    on_node: bool = Field(description="Whether a node runs on the served repository's host and made these checks.")
    enforces: list[str] = Field(description="The restrictions of C6 this node holds runs to (D24).")
    cpu_rate: float | None = Field(description="The node's per-run CPU rate, in CPUs (D17).")
    run: RunFacts | None = Field(description="The record the caller runs, when it is a run.")
    release: str | None = Field(None, description="The release whose code answered this call (D45, D46): its "
                                                  "name, CHECKIN16-DIGEST16; null when it runs from no release.")
    nodes: list[NodeFacts] = Field(default_factory=list, description=(
        "Every node of this repository (D36): the server's own first, then each node elsewhere; "
        "empty where the caller is not on the server's node."))


def _nodes(caller: Caller) -> list[NodeFacts]:
    """The server's node keeps the list (D36, ocx/node/serving/registry.py)."""
    from datetime import datetime

    from ..node.releases.moves import last_move
    from ..node.serving.registry import NodeEntry, every_node

    node = caller.node
    if node is None or node.elsewhere:
        return []
    with caller.reading() as repository:
        here = NodeEntry(node.name, node.node_user, repository.server_code, tuple(sorted(ENFORCED_RESTRICTIONS)),
                         here=True)
        listed = every_node(repository, here)
        moves = {e.name: last_move(repository, e.name, e.node_user) for e in listed}  # the served one: senders, F2
    releases = {name: move.release if move is not None else None for name, move in moves.items()}
    return [NodeFacts(name=e.name, server_code=e.server_code, node_user=e.node_user, enforces=list(e.enforces),
                      here=e.here, heard=datetime.fromtimestamp(e.heard, UTC).isoformat(timespec="seconds")
                      if e.heard else None, release=releases[e.name]) for e in listed]


def release_of(prefix: str) -> str | None:
    """The release whose directory PREFIX is (a link such as `current` resolved), or None (D45)."""
    import os
    import re

    name = os.path.basename(os.path.realpath(prefix))
    return name if re.fullmatch(r"[0-9a-f]{16}-[0-9a-f]{16}", name, re.ASCII) else None


def answering_release() -> str | None:
    """The release this process runs from: its interpreter's prefix is the release's directory."""
    import sys

    return release_of(sys.prefix)


def _letters(held: frozenset[str]) -> str:
    return "".join(sorted(held))


class StatusTool(Tool):
    name = "status"
    summary = "Say who and where the caller is, this node's server-code, what it enforces and its per-run CPU rate."
    Input = StatusInput
    Result = StatusResult
    capability = ANYONE

    def act(self, act: Act, given: StatusInput) -> StatusResult:
        caller = act.caller
        run = caller.open_run()
        node = caller.node
        result = StatusResult(
            login=caller.login, capabilities=_letters(caller.capabilities()), repository=caller.where,
            node=caller.server_code(), on_node=node is not None,
            enforces=sorted(ENFORCED_RESTRICTIONS) if node is not None else [],
            cpu_rate=node.cpu_quota if node is not None else None,
            run=RunFacts(record=run.hash, place=run.place, restrict=run.record.restrict.model_dump(exclude_none=True))
            if run is not None else None,
            nodes=_nodes(caller),
            release=answering_release(),
        )
        act.step("read", f"{caller.login} at {caller.where}, node {result.node}")
        return result
