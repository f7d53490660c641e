"""Who asked for a release step and where its outcome is posted (D46), for `ocx release` on the node.

Asked from the node's command line, the login is `--by LOGIN` or root of this host; asked by a
request (`--request POSTHASH`, the node's service starts the command so, ocx/node_service/
release_requests.py), the login is the request's sender as the served repository says (F2),
the request is read again and must ask this very step, its sender must hold admin or setup
now, and it is claimed so that it is acted on once (announce.claim). The outcome is posted in
the node's releases thread when the step moved the node's own releases' root, or was asked by
a request; a root of a test's own (`--root`) posts nothing unless asked by one. What was posted
is said on standard error: standard output stays what the step says.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..protocol.errors import OcxError
from .say import say

if TYPE_CHECKING:
    from ..node.config import NodeConfig
    from ..node.releases.once import Became
    from ..node.releases.thread import Asked as Read


@dataclass(frozen=True)
class Asked:
    node: NodeConfig | None  # None: nothing is posted
    server_code: str
    login: str
    request: str | None


class AlreadyActed(OcxError):
    """The request was claimed by an earlier command (a restart of the node started it again): WHO
    asked it, for `complete`."""

    def __init__(self, who: Asked) -> None:
        super().__init__(f"request: {who.request} was claimed already")
        self.who = who


def _one_node(name: str | None) -> NodeConfig | None:
    from ..node import config as node_config
    from ..node.host_paths import configured_nodes

    names = [name] if name else configured_nodes()
    return node_config.load(names[0]) if len(names) == 1 else None


def asked(step: str, root: str, node: str | None, request: str | None, by: str | None,
          checkin: str | None = None) -> Asked:
    """Who asked STEP, checked (module doc); ValueError naming the field when a request does not
    ask it, AlreadyActed when another command took it first."""
    from ..fossil.repository import Repository
    from ..node.host_paths import RELEASES_DIRECTORY
    from ..node.releases.announce import claim, here_login
    from ..node.releases.thread import read_request

    config = _one_node(node)
    if request is None:
        if config is None or root != RELEASES_DIRECTORY:  # a test's own root is no node's: nothing posted
            return Asked(None, "", by or here_login(), None)
        with Repository(config.repository) as repository:
            return Asked(config, repository.server_code, by or here_login(), None)
    if config is None:
        raise ValueError("node: name the node whose releases thread holds the request")
    with Repository(config.repository) as repository:
        server_code = repository.server_code
        read = None if config.elsewhere else read_request(repository, request, server_code)
    if config.elsewhere:  # its clone cannot tell the sender: the server's node reads the post (D37, D48)
        read = _read_at_server(config, request)
    if read is None:
        raise ValueError(f"request: {request} holds no release request")
    if read.refused is not None:
        from ..node.releases.once import read_claim

        if (read_claim(root, request) or {}).get("step") == step:  # begun while its sender could: completed
            raise AlreadyActed(Asked(config, server_code, read.sender or "", request))
        raise ValueError(f"{read.refused.field}: {read.refused.why}")
    assert read.request is not None
    if read.request.ocx_release != step or read.request.checkin != checkin:
        raise ValueError(f"request: {request} asks {read.request.ocx_release} {read.request.checkin or ''}, "
                         f"not this {step}")
    who = Asked(config, server_code, read.sender or "", request)
    if not claim(root, request):
        raise AlreadyActed(who)
    return who


def _read_at_server(config: NodeConfig, request: str) -> Read | None:
    return _at_server(config, request)[0]


def _at_server(config: NodeConfig, request: str) -> tuple[Read | None, str | None]:
    """REQUEST as the server's node reads it (D37, D48), and the node user's answer it holds, if any."""
    from ..node.releases.thread import answered_from, asked_from
    from ..node.server_link import ServerLink

    told = ServerLink.of_node(config).release_request(request)
    post, read = asked_from(told)
    if post != request:
        raise ValueError(f"request: the server's node answered of {post}, not {request}")
    return read, answered_from(told)


def told(who: Asked, step: str, done: str, root: str, release: str | None, why: str | None = None) -> str | None:
    """The step's outcome posted in the node's releases thread (D46); never fails the step. The
    post's hash, or None when nothing was posted."""
    if who.node is None:
        return None
    from ..node.releases.announce import facts_of, outcome, post
    from ..node.releases.links import Releases

    facts, line = outcome(step, done, who.node, who.server_code, who.login, facts_of(Releases(root), release), why)
    try:
        posted = post(who.node, facts, line, reply_to=who.request)
    except Exception as error:  # the step is done (or refused) whatever the forum says: said, not raised
        say(f"ocx release: the outcome was not posted in the releases thread: {error}", err=True)
        return None
    say(f"posted in the releases thread: {posted}", err=True)  # standard output stays the step's own
    return posted


def refused_request(step: str, root: str, node: str | None, request: str, why: str) -> None:
    """A request this command cannot carry out, answered in the thread as refused (D46), once: a
    claim left by a command killed before its refusal was posted, with nothing begun, is answered now."""
    from ..fossil.repository import Repository
    from ..node.releases.announce import claim
    from ..node.releases.once import answered, read_claim
    from ..node.releases.thread import answer_to, releases_thread

    config = _one_node(node)
    if config is None:
        return
    if not claim(root, request) and (read_claim(root, request) or {"step": None}).keys() & {"step", "answered"}:
        return  # begun (its own command answers or completes it) or answered
    with Repository(config.repository) as repository:
        server_code = repository.server_code
        try:
            sender = "" if config.elsewhere else repository.post(request).sender.login or ""
        except LookupError:
            sender = ""
        # a clone names itself the sender of every post it pulled (D37): there the node's earlier
        # answer cannot be told from another's reply; the server's node tells it
        thread = None if config.elsewhere else releases_thread(repository, config.name, config.node_user)
        posted = None if config.elsewhere else answer_to(repository, thread, request, config.node_user)
    if config.elsewhere:  # the server's node says who sent it, and its answer if there is one (D37)
        try:
            read, posted = _at_server(config, request)
            sender = read.sender or "" if read is not None else ""
        except (OcxError, OSError, ValueError):
            sender = ""
    if posted is None:
        posted = told(Asked(config, server_code, sender, request), step, "refused", root, None, why)
    if posted is not None:
        answered(root, request, posted)


def complete(step: str, root: str, who: Asked, checkin: str | None) -> Became | None:
    """A request claimed by a command that ended before its answer (killed): the root recovered
    under its lock (the move completed or undone), what became of the step read from the claim and
    the links, and answered once (node/releases/once.py): what became of it; None when it was
    answered already."""
    from ..fossil.repository import Repository
    from ..node.releases.once import answered, became, read_claim
    from ..node.releases.staging import moving
    from ..node.releases.thread import answer_to, releases_thread

    assert who.node is not None and who.request is not None
    with moving(root) as releases:
        claim = read_claim(root, who.request) or {}
        if "answered" in claim:
            return None
        found = became(step, claim, releases, checkin)
    if who.node.elsewhere:  # its answer went to the server (announce.node_writer): the server's node says (D37)
        posted = _at_server(who.node, who.request)[1]
    else:
        with Repository(who.node.repository) as repository:
            thread = releases_thread(repository, who.node.name, who.node.node_user)
            posted = answer_to(repository, thread, who.request, who.node.node_user)
    if posted is None:  # the answer is idempotent: none posted before the kill, so this is the one
        posted = told(who, step, found.done, root, found.release, found.why)
    if posted is None:
        raise ValueError(f"request: {who.request}'s answer could not be posted: the next start completes it")
    answered(root, who.request, posted)
    return found
