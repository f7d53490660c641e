"""The node's releases thread (D46): where admins ask for a stage, accept or roll-back and the
node answers each, on the record. Read by the `release` tool (which writes a request as its
caller), the node's service (which acts on each request once) and `ocx release` on the node
(which posts each step's outcome as the node user).

The thread is the first-received root post titled `thread_title(NODE)` (protocol/release_request.py)
whose sender is the node user or holds admin or setup now: anyone may start a thread of that
title, and one by anybody else is never the node's. Whoever asks first starts it (the tool, as
its caller; `ocx release` on the node, as the node user), so a node that never moves a release
has no such thread. Requests are that thread's posts (its root included) sent by anyone but the
node user, not edits (D9: an edit is never a message, and acting on one would act twice) and not
held for moderation (D28); one is answered when the node user's post replies to it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...fossil.heads import ThreadPost, thread_posts
from ...fossil.repository import Repository
from ...fossil.titled import roots_titled
from ...protocol.errors import FieldError
from ...protocol.release_request import ReleaseRequest, parse_request, request_object, thread_title

MAY_RELEASE = frozenset("as")  # admin or setup (D46)


def may_release(repository: Repository, login: str | None) -> bool:
    """Whether LOGIN holds admin or setup in the repository's user table now (never a page's word)."""
    if not login:
        return False
    try:
        return bool(repository.effective_capabilities(login) & MAY_RELEASE)
    except LookupError:
        return False


def releases_thread(repository: Repository, node_name: str, node_user: str) -> str | None:
    """The root post of NODE_NAME's releases thread, or None while nobody started it (module doc)."""
    for root in roots_titled(repository, thread_title(node_name)):
        if root.sender == node_user or may_release(repository, root.sender):
            return root.hash
    return None


def unanswered(repository: Repository, root: str, node_user: str) -> list[ThreadPost]:
    """The thread's posts that may be requests and have no reply by the node user yet, in order."""
    posts = thread_posts(repository, [root])[root]
    answered = {post.in_reply_to for post in posts if post.sender == node_user and post.in_reply_to}
    return [post for post in posts if post.sender != node_user and not post.pending_moderation
            and post.edit_of is None and post.hash not in answered]


def answer_to(repository: Repository, root: str | None, request: str, node_user: str) -> str | None:
    """The node user's reply to REQUEST in the thread ROOT, if it holds one; read where each post's
    sender is known (the served repository: a clone names no sender it can vouch for, D37)."""
    if root is None:
        return None
    for post in thread_posts(repository, [root])[root]:
        if post.in_reply_to == request and post.sender == node_user and post.edit_of is None:
            return post.hash
    return None


def answered_from(answer: object) -> str | None:
    """The node user's reply the server's node found to a request (`answered` of `node=release-request`,
    node/serving/release_facts.py), read as bytes from the network: a full hash, else none."""
    found = answer.get("answered") if isinstance(answer, dict) else None
    if isinstance(found, str) and len(found) in (40, 64) and not set(found) - set("0123456789abcdef"):
        return found
    return None


@dataclass(frozen=True)
class Asked:
    """A post of the thread read as a request: REQUEST, or REFUSED naming the field at fault."""

    post: str
    sender: str | None
    request: ReleaseRequest | None
    refused: FieldError | None


def read_request(repository: Repository, post_hash: str, server_code: str) -> Asked | None:
    """POST_HASH as a request for the node SERVER_CODE, or None when it holds no request (talk).
    The sender's right is read from the user table now (D46)."""
    post = repository.post(post_hash)
    found = request_object(post.body)
    if found is None:
        return None
    sender = post.sender.login
    try:
        request = parse_request(found)
        if request.node != server_code:
            raise FieldError("node", f"{request.node} is not this node ({server_code})")
        if not may_release(repository, sender):
            raise FieldError("caller", f"{sender or 'a sender with no login'} does not hold admin or setup "
                                       "in this repository (D46)")
    except FieldError as refused:
        return Asked(post_hash, sender, None, refused)
    return Asked(post_hash, sender, request, None)


def asked_from(answer: object) -> tuple[str, Asked | None]:
    """A post of a node elsewhere's thread as the server's node read it (`node=release-request`,
    node/serving/release_facts.py: its sender and that sender's letters are the served repository's,
    D37): (the post, None for talk, else the request or the refusal). Read as bytes from the network:
    the request is parsed here again; a post not named by a full hash is refused naming `post`."""
    found = answer if isinstance(answer, dict) else {}
    post = found.get("post")
    if not isinstance(post, str) or len(post) not in (40, 64) or set(post) - set("0123456789abcdef"):
        raise FieldError("post", "the server's node named no post by its full hash")
    if found.get("talk") is True:
        return post, None
    sender = found.get("sender") if isinstance(found.get("sender"), str) else None
    refused = found.get("refused")
    if isinstance(refused, dict):
        return post, Asked(post, sender, None, FieldError(str(refused.get("field", "")), str(refused.get("why", ""))))
    request = found.get("request")
    try:
        return post, Asked(post, sender, parse_request(request if isinstance(request, dict) else {}), None)
    except FieldError as error:
        return post, Asked(post, sender, None, error)
