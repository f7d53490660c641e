"""`ocx demo --wheelhouse DIR`: the demo node's first release (D45, D46), staged and accepted by
`ocx release` itself, so the node runs through `current` and moves to a later check-in from its page.

OCX's own source tree (the one this process runs from: contrib/demo.sh's checkout, /src in its
container) is made a wheel (setup/source_wheel.py); `ocx release stage --wheel --wheelhouse` builds
it offline as the build user (D48) and `ocx release accept` makes it current and restarts the
node's services onto it, each posting its outcome in the node's releases thread (D46). A node
with a release current already is left as it is: the demo installs only the first one.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import typer

from ..node.host_paths import RELEASES_DIRECTORY
from ..node.releases.source_wheel import source_wheel
from ..setup.demo import Demo
from .say import say

# The tree `import ocx` found: OCX's own source, whose pyproject.toml names its dependencies.
SOURCE = Path(__file__).resolve().parents[2]


def step_first_release(demo: Demo, root: str = RELEASES_DIRECTORY) -> None:
    from ..node.releases.shown import described
    from .cli_release import accept, stage

    if demo.wheelhouse is None:
        return
    demo.say()
    current = described(root)["current"]
    if current is not None:
        demo.say(f"Release {current['release']} is current already: nothing staged (move it from the console's "
                 "Releases card, or `ocx release`).")
        return
    if not (SOURCE / "pyproject.toml").is_file():
        say(f"ocx demo: wheelhouse: OCX runs from {SOURCE}, which is no source tree (no pyproject.toml)", err=True)
        raise typer.Exit(1)
    demo.say(f"First release: a wheel of {SOURCE}, built offline with the wheels in {demo.wheelhouse} (D45, D48):")
    with tempfile.TemporaryDirectory(prefix="ocx-demo-wheel-") as work:
        wheel = source_wheel(SOURCE, Path(work))
        os.chmod(wheel, 0o644)
        stage(wheel=str(wheel), checkin=None, wheelhouse=demo.wheelhouse, node=demo.name, dry_run=False, root=root,
              request=None, by=None)
    accept(dry_run=False, root=root, node=demo.name, request=None, by=None)
    accepted = described(root)["current"]
    assert accepted is not None
    demo.say(f"  release         {accepted['release']} current: the node's services run from "
             f"{root}/{accepted['release']} (docs/releases.md)")
