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

import asyncio
import json
import sys
import time
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
    from ..systemd.units import TransientService
    from .context import NodeContext

MARKS = "release-requests"
# The newest receipt each node's thread was read through: a pass after which nothing arrived reads
# nothing (the title's lookup scans Fossil's event table). Lost with the process: read once again.
_READ_THROUGH: dict[str, int] = {}
# A request's command that ends with no answer again and again (its answer never taken by the server, its
# sender's rights gone since its claim) is not started for ever: each start pokes the next pass at once.
AGAIN_MAX = 5
STOPPING_SECONDS = 10.0  # a request's unit in its stop step (the poke) waited for so long
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
        # Started and still unanswered: its unit runs, or ended with no answer (killed; C4, once.py).
        # One whose sender lost `a`/`s` since is not started again here (its step and check-in are not
        # read from a refused post); `ocx release STEP --request POST` by hand completes it.
        started = [found for post, found in read if _restartable(_marked(context, post) or {})
                   and found is not None and found.request is not None]
        launched = False
        for request, found in asked:
            if found is None:
                _mark(context, request, {"talk": True})  # not a request: never read again
                continue
            acted += await _act(context, systemd, found)
            launched = launched or found.refused is None
        for again in started:
            acted += await _started_again(context, systemd, again)
        # Read again after each pass while a request's unit was started and its answer is not in: its unit
        # may end with none (killed), and the poke of its stop step is then the only thing that comes.
        if settled and not launched and not started:  # and only once the newest post was crosslinked
            _READ_THROUGH[config.name] = newest
    except Exception as error:  # a request never stops the node's passes: logged, tried after the next
        context.log(f"release requests not read: {describe(error)}", priority=4)
    return acted


async def _act(context: NodeContext, systemd: Systemd, found: Asked) -> int:
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
    await systemd.start_once(_service(context, found))
    context.log(f"release request {found.post[:12]} by {found.sender}: {found.request and found.request.ocx_release} "
                f"started in {name}", priority=5)
    return 1


def _service(context: NodeContext, found: Asked) -> TransientService:
    """The request's unit; its stop step pokes the node, so one that ended with no answer (killed, or
    out of time) is started again at once (_started_again), not at the next change of the repository."""
    from ..systemd.units import ExecCommand, TransientService

    config = context.config
    poke = ExecCommand(argv=[sys.executable, "-I", "-m", "ocx.node.wake", config.name], ignore_failure=True)
    return TransientService(
        name=unit_name(found.post), argv=argv(found, config.name), slice=None,
        description=f"OCX node {config.name}: release request {found.post[:12]} by {found.sender} (D46)",
        runtime_max_sec=UNIT_SECONDS, add_ref=False, exec_stop_post=[poke])


async def _started_again(context: NodeContext, systemd: Systemd, found: Asked) -> int:
    """A request whose unit was started and that has no answer yet: left to its unit while that runs;
    once it ended with no answer (its command killed after its claim), started again, and its command,
    finding the claim, completes the step or says it was lost, and answers once (node/releases/once.py)."""
    name = unit_name(found.post)
    state = await systemd.state(name)
    deadline = time.monotonic() + STOPPING_SECONDS
    while state is not None and state.active_state == "deactivating" and time.monotonic() < deadline:
        await asyncio.sleep(0.1)  # its stop step is the poke that woke this pass: it ends at once
        state = await systemd.state(name)
    if state is not None and state.active_state not in ("failed", "inactive"):
        return 0
    mark = _marked(context, found.post) or {}
    again = int(mark.get("again", 0)) + 1
    _mark(context, found.post, {**mark, "again": again})
    if again > AGAIN_MAX:
        context.log(f"release request {found.post[:12]}: {name} ended with no answer {AGAIN_MAX + 1} times; left "
                    f"unanswered (its journal says why; `ocx release STEP --request {found.post}` completes it)",
                    priority=3)
        return 0
    await systemd.start_once(_service(context, found))
    context.log(f"release request {found.post[:12]}: {name} ended with no answer; started again ({again}) "
                "to complete it and answer once", priority=4)
    return 1


def _restartable(mark: dict[str, Any]) -> bool:
    """Started by this node, and not yet given up on (AGAIN_MAX)."""
    return "unit" in mark and int(mark.get("again", 0)) <= AGAIN_MAX
