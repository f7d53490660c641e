"""A node elsewhere following the server's accepted release (D48; node/releases/following.py).

After each pass of a node elsewhere set to follow, once something new arrived in its clone, the
node asks the server's node for the server's last accept or roll-back (read there from the served
repository: only the server's node user's post counts, F2). One it has not acted on is carried
out, without holding the pass, in a transient unit `ocx-release-follow-HASH16.service` running root's own

    python -I -m ocx.cli.launch release follow-step --post POST --node NAME

then marked in the node's state (`release-follow/POST.json`: not asked of the server again).
The unit asks the server again, claims the post (acted on once, through restarts: announce.claim),
stages the check-in from the node's own clone with its own current release's wheels and accepts
it when its smoke passed (or rolls back), and posts each step in the node's own releases thread.
"""
from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING

from ..files import write_atomically
from ..fossil.repository import Repository
from ..node.faults import describe
from ..node.releases.following import follows, server_move
from ..node.served import Elsewhere
from ..node.server_link import ServerRefused
from ..node.wake import poke
from .release_requests import UNIT_SECONDS

if TYPE_CHECKING:
    from ..systemd.manager import Systemd
    from .context import NodeContext

MARKS = "release-follow"
_READ_THROUGH: dict[str, int] = {}  # the clone's newest receipt after which the server was last asked
_FAILED: dict[str, int] = {}  # asks that failed in a row, for the pause before the next
RETRY_FIRST, RETRY_MOST = 2.0, 60.0
# The pass waits for the answer: the server's page, restarting after its own accept, may hold the
# request; a short bound, and the growing pause's poke asks again.
ASK_SECONDS = 10.0


def unit_name(post: str) -> str:
    return f"ocx-release-follow-{post[:16]}.service"


def argv(post: str, node: str) -> list[str]:
    return [sys.executable, "-I", "-m", "ocx.cli.launch", "release", "follow-step", "--post", post, "--node", node]


async def after_pass(context: NodeContext, systemd: Systemd) -> int:
    """The server's last move started in its unit when it is new here; 1 when started. Never raises."""
    from ..systemd.units import TransientService

    config = context.config
    if not follows(config):
        return 0
    newest = -1
    try:
        with Repository(config.repository) as repository:
            newest = repository.max_rcvid()
        if _READ_THROUGH.get(config.name) == newest:
            return 0
        served = context.served
        if not isinstance(served, Elsewhere):
            return 0
        found = server_move(served.link().releases(timeout=ASK_SECONDS))
        _READ_THROUGH[config.name] = newest
        _FAILED.pop(config.name, None)
        move = found.move
        mark = config.state_dir / MARKS / f"{move.post}.json" if move is not None else None
        if move is None or mark is None or mark.exists():
            return 0
        name = unit_name(move.post)
        service = TransientService(
            name=name, argv=argv(move.post, config.name), slice=None,
            description=f"OCX node {config.name}: following {found.server}'s {move.step} {move.post[:12]} (D48)",
            runtime_max_sec=UNIT_SECONDS, add_ref=False)
        # Started, then marked: a kill between the two starts it again, and its claim acts once.
        await systemd.start_once(service)
        mark.parent.mkdir(mode=0o700, exist_ok=True)
        write_atomically(mark, json.dumps({"unit": name, "step": move.step, "checkin": move.checkin}) + "\n")
        context.log(f"following {found.server}'s {move.step} of {move.checkin}: started in {name}", priority=5)
        return 1
    except ServerRefused as error:  # an older server's node, say: asked again when something new arrives
        _READ_THROUGH[config.name] = newest
        context.log(f"the server's releases not followed: {describe(error)}", priority=4)
        return 0
    except Exception as error:  # nothing the server answers stops the node's passes
        # The server's accept restarts its page right after its post: asked again after a growing
        # pause, by a poke of the node's own socket, not only when something new arrives.
        failed = _FAILED[config.name] = _FAILED.get(config.name, 0) + 1
        pause = min(RETRY_MOST, RETRY_FIRST * 2 ** min(failed - 1, 8))
        asyncio.get_running_loop().call_later(pause, poke, config.name, "follow")
        context.log(f"the server's releases not followed: {describe(error)}; asked again in {pause:.0f} s",
                    priority=4)
        return 0
