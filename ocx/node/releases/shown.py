"""What `current`, `previous` and `next` name, with each release's check-in, digest and smoke as
staged (D46): read by `ocx release show`, the `release` tool's `show` and the console's card.

The releases' root is 0755 and its records 0644, so the page (the Fossil server's account) reads
them as root does: the links with no target followed past their name, each record bounded and
with no link followed (links.py). A root it cannot read is said, never guessed at.
"""
from __future__ import annotations

import os
from typing import Any

from .links import LINKS, ReleaseError, Releases


def described(root: str) -> dict[str, dict[str, Any] | None]:
    """Each link's release and its record; None for a link that is not there."""
    if not os.path.isdir(root):
        return {link: None for link in LINKS}
    releases = Releases(root)
    shown: dict[str, dict[str, Any] | None] = {}
    for link, release in releases.links().items():
        if release is None:
            shown[link] = None
            continue
        try:
            staged = releases.staged(release)
            shown[link] = {"release": release, "checkin": staged.checkin, "digest": staged.digest,
                           "smoke": staged.smoke}
        except (ReleaseError, OSError) as error:
            shown[link] = {"release": release, "record": str(error)}
    return shown
