"""More cores, more runs (docs/node.md, 'Cores, a long day, before and after'):
`python bench/cores.py [RECORDS] [empty]` from the repository's root.

The burst of bench/run.py (bench/inside_cores.py: RECORDS session records, their homes made
ahead) in a systemd test container given one core (docker's cpuset "0"), then in a fresh one
given two ("0,1"), each on its own copy of the history bench/run.py uses (`empty`: a node on an
empty repository instead). It prints each burst's lines, the time from the first receipt to the
last program's start on each, and their ratio (the goal: one core at least 1.8 times two), with
the machine's load average: other work on a shared machine skews it. It asserts nothing.
"""
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

import run  # noqa: E402
from inside_cores import ALL_STARTED  # noqa: E402

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402

CPUSETS = (("0", "1 core"), ("0,1", "2 cores"))


def history() -> Path:
    """bench/run.py's history file. From a git worktree elsewhere than the main checkout, click.fossil
    is found beside the main checkout (history.py looks beside this tree's root, which has none)."""
    import subprocess

    import history as maker

    if not maker.CLICK.exists():
        common = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
                                capture_output=True, text=True).stdout.strip()
        beside_main = Path(common).parent.parent / "shared" / "data" / "click.fossil"
        if common and beside_main.exists():
            maker.CLICK = beside_main
    return run.history()


def streamed(container: SystemdContainer, argv: list[str]) -> str:
    """ARGV run in CONTAINER, its output printed as it comes (a long day takes hours) and returned."""
    chunks = []
    for chunk in container._c.get_wrapped_container().exec_run(argv, stream=True).output:
        text = chunk.decode(errors="replace")
        print(text, end="", flush=True)
        chunks.append(text)
    return "".join(chunks)


def burst_on(cpuset: str, records: str, data: Path | None) -> float | None:
    """The seconds to start all RECORDS in a container given CPUSET; None if the burst did not say."""
    volumes = {str(data.parent): run.INSIDE} if data else {}
    container = SystemdContainer(build_image(), src=run.source(), volumes=run.overlay(volumes), cpuset=cpuset)
    container.start()
    try:
        inside_history = f"{run.INSIDE}/{data.name}" if data else "-"
        output = streamed(container, ["/opt/ocx/venv/bin/python", "-u", "/src/bench/inside_cores.py", "cores",
                                      "8484", inside_history, records, cpuset])
    finally:
        container.stop()
    found = re.search(rf"{ALL_STARTED} ([0-9.]+) s", output)
    return float(found.group(1)) if found else None


def main(records: str = "100", repository: str = "history") -> None:
    run.compiled()
    data = None if repository == "empty" else history()
    engine()
    seconds = {}
    for cpuset, what in CPUSETS:
        before = os.getloadavg()
        seconds[what] = burst_on(cpuset, records, data)
        print(f"{what} (cpuset {cpuset}): {seconds[what]} s to start all {records}; the machine's load average "
              f"{before[0]:.2f} before, {os.getloadavg()[0]:.2f} after", flush=True)
    one, two = seconds["1 core"], seconds["2 cores"]
    ratio = f"{one / two:.2f}" if one and two else "unknown (a burst did not finish)"
    print(f"burst of {records} ({'click history' if data else 'empty repository'}): all started on 1 core in "
          f"{one} s, on 2 cores in {two} s: ratio {ratio} (goal >= 1.8)", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
