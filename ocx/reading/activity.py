"""`ocx activity` (D33) at the cost of this node's messages, not the forum's.

activity's rules are ocx/node/activity.py's (`read_activity`): which
records are this node's and open, which responses answer them. It reads the
posts of every sender entitled to write one (admins, the node user), and
keeps only messages whose `node` is this server-code (C1). Such a message's
post holds the server-code as written, or a JSON `\\u` escape that could
spell it: a post holding neither cannot be one, and is passed over before
its hash is checked and its cards parsed (`Repository.forum_posts`'
`mentioning`). So the same reading decodes the node's own messages, not
every post an admin ever wrote. `ocx activity` reads through it
(cli/cli_reading.py), and so does the page (console_messages.py).
"""
from __future__ import annotations

from collections.abc import Iterable

from ..fossil.artifacts import Post
from ..fossil.repository import Repository

ESCAPE = b"\\u"  # JSON's escape that can spell any character of a server-code


class NodeMessagesRepository(Repository):
    """The repository as activity's reading needs it: its forum posts are
    those that may hold a message for its own server-code (module doc)."""

    def forum_posts(self, senders: Iterable[str] | None = None,
                    mentioning: tuple[bytes, ...] | None = None) -> list[Post]:
        own = (self.server_code.encode(), ESCAPE)
        return super().forum_posts(senders, own if mentioning is None else mentioning)

