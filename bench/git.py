"""The git mirror's benchmark (D49): `python bench/git.py [ROUNDS] [CLICK]` from the repository's root.

It starts the systemd test container with ../shared/data (or CLICK's
directory) mounted read-only, sets a node up by `ocx node init` on a copy
of click.fossil (3,335 check-ins) and, with the real `git` client against
the node's Fossil server at /ext/git (bench/git_inside.py), prints: the
first mirror's time, a clone's time, check-ins, branches, leaves and tags
in the clone against Fossil's own tables, then for ROUNDS (10) check-ins
pushed one at a time on a quiet node the time from each receipt to the
first `git fetch` that shows it (target: median <= 1 s) and the update's
own time (target: one new check-in <= 1 s). It asserts nothing.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402

INSIDE = "/data"


def main(rounds: str = "10", click: str | None = None) -> None:
    data = Path(click) if click else ROOT.parent.parent / "shared" / "data" / "click.fossil"
    if not data.exists():
        data = Path("/work/shared/data/click.fossil")
    engine()
    container = SystemdContainer(build_image(), src=ROOT, volumes={str(data.parent): INSIDE})
    container.start()
    try:
        done = container.exec(["/opt/ocx/venv/bin/python", "/src/bench/git_inside.py", f"{INSIDE}/{data.name}",
                               rounds], workdir="/")
        print(done.output, end="")
    finally:
        container.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
