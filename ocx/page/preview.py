"""/ext/ocx-next: the staged release's own page, as a preview (D46; docs/releases.md, 'The preview').

Run by: the ext program `ocx-next` in the Fossil server's --extroot (node/releases/preview.py writes
it), from root's copy of the release `next` names:

    RELEASES/preview/ID/bin/python -I -B -m ocx.page.preview /etc/ocx/NAME.json

As: the Fossil server's account, as /ext/ocx is (D30). The page runs here, in this process, from the
staged release's own code: never through the page service of `current` (page_service.py), whose
socket this does not open. Every answer is marked with the release and its check-in (a banner on
the console, a header and a `preview` key on every answer), every tool a form or a JSON call runs
is made a dry run by the page itself (web_tools.run_call), and every other change the page takes
(nodes elsewhere, join tokens) is refused (web_viewer.refusal): nothing is written, whatever is
posted.

The release is this process's own (its prefix, RELEASES/preview/ID); its check-in is read from its
staged record, bounded and with no link followed (node/releases/links.py).
"""
from __future__ import annotations

import os
import sys

from ..node.releases.links import ReleaseError, Releases
from ..tools.status import release_of
from .web import cgi_answer
from .web_viewer import Node, Preview

NOT_A_PREVIEW = ("Status: 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
                 "This page runs only as the preview of a staged release (/ext/ocx-next, D46).\n")


def previewed(prefix: str = sys.prefix) -> Preview | None:
    """The release this process previews, from its own prefix RELEASES/preview/ID, with its check-in
    as staged; None when it runs from anywhere else."""
    real = os.path.realpath(prefix)
    release = release_of(real)
    if release is None or os.path.basename(os.path.dirname(real)) != "preview":
        return None
    root = os.path.dirname(os.path.dirname(real))
    try:
        checkin = Releases(root).staged(release).checkin
    except (ReleaseError, OSError) as error:
        checkin = f"unknown ({error})"
    return Preview(release, checkin)


def main(argv: list[str], preview: Preview | None = None) -> int:
    """One request, as Fossil gives an ext program (web.main). PREVIEW: this process's own (previewed)."""
    env = dict(os.environ)
    preview = preview or previewed()
    if preview is None:
        sys.stdout.write(NOT_A_PREVIEW)
        return 0
    try:
        length = int(env.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = sys.stdin.buffer.read(length) if length > 0 else b""
    node = Node(argv[0] if argv else None, env.get("FOSSIL_REPOSITORY"), preview=preview)
    sys.stdout.write(cgi_answer(argv, env, body, node))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
