"""Release requests acted on by the node, as root, once each (D46; docs/releases.md).

After each pass the node reads its releases thread (node/releases/thread.py; a node elsewhere has
the server's node read it, whose repository knows each post's sender, D37, D48): each post that
holds a request and has no answer by the node user is checked here, its sender's admin or
setup read from the user table now, never the page's word. A request that is malformed, for
another node, or from a login without `a` or `s` is answered refused in the thread, naming the
field, and nothing else happens. A good one is carried out by root's own code, never the
request's: a transient unit `ocx-release-request-HASH16.service` running this release's
`python -I -m ocx.cli.launch release STEP ... --request HASH --node NAME`, which reads the
request again, claims it (a request is acted on once, through restarts: announce.claim), moves
the links and posts the outcome in reply (D46). The pass never waits for it (a stage builds for
minutes): the unit's post is the next receipt.

Each request gets a mark in the node's state (`release-requests/HASH.json`, written before its
unit starts or its refusal is posted), so a request is started or refused at most once by this
node: a marked request whose unit was started is left to its unit; a marked refusal with no
answer in the thread (the node killed between the two) is posted again.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..files import write_atomically
from ..fossil.repository import Repository
from ..fossil.titled import roots_titled
from ..node.faults import describe
from ..node.releases.announce import outcome, post
from ..node.releases.staging import BUILD_SECONDS
from ..node.releases.thread import Asked, asked_from, read_request, releases_thread, unanswered
from ..node.served import Elsewhere
from ..protocol.release_request import thread_title

if TYPE_CHECKING:
    from ..systemd.manager import Systemd
    from .context import NodeContext

MARKS = "release-requests"
# The newest receipt each node's thread was read through: a pass after which nothing arrived reads
# nothing (the title's lookup scans Fossil's event table). Lost with the process: read once again.
_READ_THROUGH: dict[str, int] = {}
UNIT_SECONDS = BUILD_SECONDS + 600.0  # the build's own bound, the copy at accept and the posts


def unit_name(request: str) -> str:
    return f"ocx-release-request-{request[:16]}.service"


def _mark_path(context: NodeContext, request: str) -> Path:
    return context.config.state_dir / MARKS / f"{request}.json"


def _marked(context: NodeContext, request: str) -> dict[str, Any] | None:
    try:
        found = json.loads(_mark_path(context, request).read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _mark(context: NodeContext, request: str, what: dict[str, Any]) -> None:
    path = _mark_path(context, request)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    write_atomically(path, json.dumps(what) + "\n")


def argv(asked: Asked, node: str) -> list[str]:
    """Root's own command line for the request: the step and its check-in, read by the node."""
    assert asked.request is not None
    step = asked.request.ocx_release
    checkin = ["--checkin", asked.request.checkin] if asked.request.checkin else []
    return [sys.executable, "-I", "-m", "ocx.cli.launch", "release", step, *checkin,
            "--request", asked.post, "--node", node]


async def after_pass(context: NodeContext, systemd: Systemd) -> int:
    """Every unanswered request acted on (module doc); how many were started or refused. Never raises:
    a request that fails here is tried again after the next pass."""
    config = context.config
    acted = 0
    if config.elsewhere:  # it follows the server's releases, if set to (D48)
        from . import release_following

        acted = await release_following.after_pass(context, systemd)
    try:
        with Repository(config.repository) as repository:
            newest = repository.max_rcvid()
            if _READ_THROUGH.get(config.name) == newest:
                return acted
            received = repository.receipt(newest)  # a post Fossil is crosslinking is not in the thread yet
            settled = received is None or repository.settled(received)
            root = None if config.elsewhere else releases_thread(repository, config.name, config.node_user)
            waiting = unanswered(repository, root, config.node_user) if root is not None else []
            read = [(head.hash, read_request(repository, head.hash, context.server_code)) for head in waiting]
            # A node elsewhere asks the server only once its clone holds a thread of its title (whoever's).
            titled = config.elsewhere and bool(roots_titled(repository, thread_title(config.name)))
        served = context.served
        if titled and isinstance(served, Elsewhere):  # its clone's senders are the server's to say (D37)
            read = [asked_from(told) for told in served.link().release_requests().get("requests") or []]
        # Marked: started, or talk; a refusal marked and unanswered (a kill between the two) is posted again.
        asked = [(post, found) for post, found in read if "refused" in (_marked(context, post) or {"refused": None})]
        for request, found in asked:
            if found is None:
                _mark(context, request, {"talk": True})  # not a request: never read again
                continue
            acted += await _act(context, systemd, found)
        if settled:  # only once every request was acted on, and the newest post crosslinked: else read again
            _READ_THROUGH[config.name] = newest
    except Exception as error:  # a request never stops the node's passes: logged, tried after the next
        context.log(f"release requests not read: {describe(error)}", priority=4)
    return acted


async def _act(context: NodeContext, systemd: Systemd, found: Asked) -> int:
    from ..systemd.units import TransientService

    config = context.config
    if found.refused is not None:
        why = f"{found.refused.field}: {found.refused.why}"
        _mark(context, found.post, {"refused": why})
        facts, line = outcome("request", "refused", config, context.server_code, found.sender or "",
                              {"release": None}, why)
        post(config, facts, line, reply_to=found.post,
             write=lambda _title, to, text: context.web().reply(str(to), text))
        context.log(f"release request {found.post[:12]} by {found.sender} refused: {why}", priority=5)
        return 1
    name = unit_name(found.post)
    _mark(context, found.post, {"unit": name, "sender": found.sender})
    service = TransientService(
        name=name, argv=argv(found, config.name), slice=None,
        description=f"OCX node {config.name}: release request {found.post[:12]} by {found.sender} (D46)",
        runtime_max_sec=UNIT_SECONDS, add_ref=False)
    await systemd.start_once(service)
    context.log(f"release request {found.post[:12]} by {found.sender}: {found.request and found.request.ocx_release} "
                f"started in {name}", priority=5)
    return 1
