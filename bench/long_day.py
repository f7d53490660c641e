"""A long day (docs/node.md, 'Cores, a long day, before and after'):
`python bench/long_day.py [RECORDS] [EVERY] [empty]` from the repository's root.

RECORDS records (2,000 by default) one after another through one node in the systemd test
container, on a copy of the history bench/run.py uses (`empty`: an empty repository): sessions,
CI check-ins, stops and budgets (bench/inside_long_day.py). Every EVERY records (200) it prints
the node's memory, the disk under its state, workspaces and homes made ahead, the journal's,
and the records answered once and twice; last, memory growth and disk against the start. It
asserts nothing.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

import run  # noqa: E402
from cores import history, streamed  # noqa: E402

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402


def main(records: str = "2000", every: str = "200", repository: str = "history") -> None:
    run.compiled()
    data = None if repository == "empty" else history()
    engine()
    volumes = {str(data.parent): run.INSIDE} if data else {}
    container = SystemdContainer(build_image(), src=run.source(), volumes=run.overlay(volumes))
    container.start()
    try:
        inside_history = f"{run.INSIDE}/{data.name}" if data else "-"
        streamed(container, ["/opt/ocx/venv/bin/python", "-u", "/src/bench/inside_long_day.py", "day", "8484",
                             inside_history, records, every])
    finally:
        container.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
