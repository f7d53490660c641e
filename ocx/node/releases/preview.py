"""The preview of the staged release at /ext/ocx-next (D46), root's side: what it runs, and the ext
program that runs it.

What the preview runs is root's own copy of the release `next` names, ROOT/preview/ID, made when root
offers it (staging.stage): copied out of staged/ with no link followed (tree.copy_tree) and its
digest compared with the staged record's, as accept does. Not staged/ID itself: staged/ is the build
user's to write, and a later stage's build runs as that user, so code the preview ran from there
could be changed after its digest was checked (D48). Not a digest checked by the ext program before
each request: a release's files are thousands, read for every page. The copy costs one copy of the
release at stage time, and accept takes it as the accepted copy (links.py); nothing runs from it
as root before (the preview runs as the Fossil server's account).

The ext program is a shell script `ocx node init` writes beside /ext/ocx's (setup/init.py). It reads
`next` once per request, takes the release's name (ID only: anything else is not a release), and
execs that copy's python on the copy's own page (page/preview.py); with nothing staged, or no copy
of what is, it answers 404 saying so. It never runs `current`'s code nor reaches its page service.
"""
from __future__ import annotations

import os
import shutil

from ..host_paths import RELEASES_DIRECTORY
from .links import PREVIEWS, ReleaseError, Staged
from .tree import copy_tree

PROGRAM = "ocx-next"  # the ext program's name: /ext/ocx-next


def copy_for_preview(root: str, staged: Staged) -> str:
    """ROOT/preview/ID, root's copy of staged/ID whose digest is the one staged; any other copy there
    (an earlier `next`'s) removed. Raises ReleaseError when the staged files are not those recorded."""
    previews = os.path.join(root, PREVIEWS)
    if os.path.islink(previews) or (os.path.lexists(previews) and not os.path.isdir(previews)):
        os.unlink(previews)
    os.makedirs(previews, 0o755, exist_ok=True)
    os.chmod(previews, 0o755)
    for name in os.listdir(previews):
        path = os.path.join(previews, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    partial = os.path.join(previews, f".{staged.release}.partial")
    digest = copy_tree(os.path.join(root, "staged", staged.release), partial)
    if digest != staged.digest:
        shutil.rmtree(partial, ignore_errors=True)
        raise ReleaseError(f"digest: {staged.release}'s files are not those the build recorded")
    home = os.path.join(previews, staged.release)
    os.rename(partial, home)
    return home


def preview_program(config_file: str, root: str = RELEASES_DIRECTORY) -> str:
    """The ext program for /ext/ocx-next (module doc), for the node whose configuration is CONFIG_FILE."""
    for given in (config_file, root):
        if not given.startswith("/") or any(c in given for c in "'\"\\$`\n"):
            raise ValueError(f"preview: {given!r} is not a plain absolute path")
    return f"""#!/bin/sh
# /ext/ocx-next (D46; docs/releases.md): the page of the release {root}/next names, run from
# root's copy of it ({root}/{PREVIEWS}/ID, its digest checked when it was staged), as this
# server's account, every tool a dry run. Written by `ocx node init`.
release=$(readlink '{root}/next' 2>/dev/null) || release=
release=${{release#staged/}}
case $release in
    [0-9a-f]*-[0-9a-f]*) case $release in *[!0-9a-f-]*) release= ;; esac ;;
    *) release= ;;
esac
if [ -z "$release" ]; then
    printf 'Status: 404 Not Found\\r\\nContent-Type: text/plain; charset=utf-8\\r\\n\\r\\n'
    printf 'Nothing is staged on this node: there is no release to preview (ocx release stage).\\n'
    exit 0
fi
copy='{root}/{PREVIEWS}/'"$release"
for page in "$copy"/lib/python3*/site-packages/ocx/page/preview.py; do
    if [ -x "$copy/bin/python" ] && [ -f "$page" ]; then
        exec "$copy/bin/python" -I -B -m ocx.page.preview '{config_file}'
    fi
done
printf 'Status: 404 Not Found\\r\\nContent-Type: text/plain; charset=utf-8\\r\\n\\r\\n'
printf 'The staged release %s has no preview here (staged before previews were made): stage it again.\\n' \\
    "$release"
"""

