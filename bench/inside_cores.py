"""The burst of bench/cores.py inside its systemd container, given one core or two: prints, asserts nothing.

    python bench/inside_cores.py NAME PORT HISTORY|- RECORDS CPUSET

A node adopts HISTORY (a copy, as bench/inside_real.py does), or with `-` starts on an empty
repository (`ocx node init`, faster to set up, not the issue's figure); then the burst of
bench/inside_real.py: RECORDS runs' homes made ahead, RECORDS session records posted as fast
as the server takes them. It prints the time from the first record's receipt to the last
program's start (ExecMainStartTimestamp), the line bench/cores.py reads, with the load average.
"""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cgroup_cpu  # noqa: E402
import inside  # noqa: E402
import inside_real  # noqa: E402
from inside import quantiles, receipt_time  # noqa: E402
from inside_wait import mirror_done  # noqa: E402

from tests.node_system.harness import ocx  # noqa: E402

ALL_STARTED = "all started in"  # bench/cores.py reads the seconds after it


def load() -> str:
    """The host's load average: the container sees the machine's /proc/loadavg, others' work included."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def set_up(name: str, port: str, history: str):
    from ocx.fossil.program import FossilError
    from tests.node_system.drive import node

    if history == "-":
        ocx("node", "init", "--name", name, "--port", port, timeout=600)
        mirror_done(name)
    else:
        inside_real.adopt(name, port, Path(history))  # it waits for the git mirror (mirror_done)
    n = node(name)
    for attempt in range(5):
        try:
            n.runner_page(n.admin)
            break
        except FossilError as error:  # the clone refused while the server's write lock is held (docs/node.md)
            print(f"the runner page's clone failed (attempt {attempt + 1} of 5): {str(error)[-120:]}", flush=True)
            inside.node_idle(name, 900)
            time.sleep(2 * (attempt + 1))  # the lock's holder is not the node's to wait on: a bench's retry
    return n


def main(name: str, port: str, history: str, count: str, cpuset: str) -> None:
    n, records = set_up(name, port, history), int(count)
    inside_real.homes_ahead(n, name, records)
    inside.node_idle(name, 900)
    load_before, before, by_group = load(), inside.cpu_seconds(name), cgroup_cpu.snapshot()
    posted = inside_real.post_all(n, records)
    since_receipt = inside.starts(n, posted)
    receipts = [receipt_time(n, r) for r in posted]
    started = [at + delay for at, delay in zip(receipts, since_receipt, strict=True)]
    spent = inside.cpu_spent(before, inside.cpu_seconds(name, tuple(n.unit(r) for r in posted)), records)
    by_group = cgroup_cpu.spent(by_group, cgroup_cpu.snapshot(), records)
    print(f"cpuset {cpuset}: burst of {records}: receipt to program start {quantiles(since_receipt)}", flush=True)
    print(f"cpuset {cpuset}: burst of {records}: CPU used: {spent}", flush=True)
    print(f"cpuset {cpuset}: burst of {records}: the same CPU by cgroup, a run: {by_group}", flush=True)
    print(f"cpuset {cpuset}: burst of {records}: {ALL_STARTED} {max(started) - min(receipts):.2f} s "
          f"(the first receipt to the last ExecMainStart); load average {load_before} before, {load()} after; "
          f"CPUs allowed {sorted(os.sched_getaffinity(0))}, os.cpu_count() {os.cpu_count()}",
          flush=True)  # the container goes with its runs: no stops needed


if __name__ == "__main__":
    main(*sys.argv[1:])
