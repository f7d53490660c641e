"""Which node a run user works for (D37): the node of the first record an
admin or setup sent naming it. Any other node refuses a record naming it
(`user`), so no node resets a password another holds.

The first such record is found in the repository, in receipt order, among
records for the nodes it lists (the server's own and each registered one:
a record for a node that does not exist claims nobody), and remembered in
the run user's contact information once a node first runs it, since who
holds admin may change later and the answer must not. Both the server's
node (its admission and preparation) and its page (a node elsewhere's
grant, grants.py) decide by this one rule.
"""
from __future__ import annotations

import re

from ...fossil.errors import UnknownUser, WrongKind
from ...fossil.repository import Repository

_WORKS_FOR = re.compile(r"OCX run user for node ([0-9a-f]{40,64})")
RUN_USER_CONTACT = "OCX run user"  # what a run user made before D37 holds (prepare.py)


def works_for_text(contact: str) -> str | None:
    """The node a contact text says the login works for, or None."""
    match = _WORKS_FOR.search(contact or "")
    return match.group(1) if match else None


def contact_naming(contact: str, node: str) -> str:
    """CONTACT saying the login works for NODE: a run user's own text is
    replaced, anyone else's kept, with the line added."""
    line = f"OCX run user for node {node} (D37)"
    if not contact or contact.strip() == RUN_USER_CONTACT or works_for_text(contact):
        return line
    return f"{contact}\n{line}"


def first_record_naming(repository: Repository, login: str, nodes: frozenset[str]) -> tuple[str, str] | None:
    """(node, record hash) of the first record, by receipt, an admin or setup
    sent naming LOGIN as its user, for one of NODES; None if there is none."""
    from ...protocol.messages import Record, message_in  # pydantic: not on a preparation's path

    candidates = []
    for post in repository.forum_posts():
        if post.edit_of is None and not post.pending_moderation:
            candidates.append((post.sender.rcvid or 0, post.hash, post.body, post.sender.login))
    for change in repository.all_ticket_changes():
        candidates.append((change.sender.rcvid or 0, change.hash, change.comment or "", change.sender.login))
    for _rcvid, hash_, text, sender in sorted(candidates):
        if login not in text and "\\u" not in text:
            continue  # cheap: most posts are not records for it (but JSON may spell it in \u escapes)
        message = message_in(text)
        if isinstance(message, Record) and message.user == login and message.node in nodes \
                and repository.holds_admin(sender):
            return message.node, hash_
    return None


def works_for(repository: Repository, login: str, nodes: frozenset[str], *,
              other_than: str | None = None) -> str | None:
    """The node LOGIN works for: remembered, or else its first record's node; None when neither.
    OTHER_THAN: a node that asks only whether LOGIN works for another one (its admission). When
    NODES names no other, the first record can only be its own or none, so the history is not read:
    that read decodes every post and ticket change (760 ms of a quiet record's pass on click.fossil
    with 20,000 posts, and again for each new run user of a burst; docs/node.md, 'Measured')."""
    try:
        contact = repository.user(login).contact
    except UnknownUser:
        contact = ""
    remembered = works_for_text(contact)
    if remembered is not None:
        return remembered
    if other_than is not None and nodes <= {other_than}:
        return None
    try:
        first = first_record_naming(repository, login, nodes)
    except WrongKind:
        first = None
    return first[0] if first else None
