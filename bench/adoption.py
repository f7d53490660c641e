"""Clones during an adoption (D49, D26): `python bench/adoption.py` from the repository's root.

A node adopts a copy of click.fossil with 20,000 posts and 10,000 verdicts (bench/history.py, made
once as bench/run.py makes it) in the systemd test container, while a login clones the served
repository over and over from the server's start until the git mirror's first update has ended.
Prints each clone (its start from the adoption's, its seconds, what failed), the adoption's time
and the mirror's first update's (its unit's journal line). It asserts nothing.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from cores import history  # noqa: E402  (click.fossil found from a worktree too)
from run import INSIDE, compiled  # noqa: E402

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402


def main() -> None:
    compiled()
    data = history()
    engine()
    container = SystemdContainer(build_image(), src=ROOT, volumes={str(data.parent): INSIDE})
    container.start()
    try:
        argv = ["/opt/ocx/venv/bin/python", "-u", "/src/bench/adoption_inside.py", "bench", "8484",
                f"{INSIDE}/{data.name}"]
        print(container.exec(argv).output)
    finally:
        container.stop()


if __name__ == "__main__":
    main()
