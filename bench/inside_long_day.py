"""A long day inside the systemd container (docs/node.md, 'Cores, a long day, before and after'):
prints, asserts nothing.

    python bench/inside_long_day.py NAME PORT HISTORY|- [RECORDS] [EVERY]

One node (adopting a copy of HISTORY as bench/inside_real.py does, or `-`: an empty
repository) is given RECORDS records one after another, each answered before the next: a
mix of sessions that exit, exit failing, outrun their wall budget or sleep until stopped,
and command records (CI) whose check-in is pushed, its `ci` verdict awaited, then stopped.
Before the first and every EVERY records it prints, the node idle: the node service's
memory, the disk its state, runs' workspaces and homes made ahead hold, the journal's, and
how many records were answered once, twice, or not yet (tests/node_system/chaos_report.py
`scan`). Last, memory growth first to last and each directory's bytes against the start.
"""
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import inside  # noqa: E402
from inside_cores import load, set_up  # noqa: E402

from ocx.node.host_paths import RUNS_STATE_DIRECTORY  # noqa: E402
from ocx.node.template import template_path  # noqa: E402
from tests.node_system.battery import Committer, ci_record, ci_values  # noqa: E402
from tests.node_system.chaos_report import scan  # noqa: E402
from tests.node_system.harness import wait_for  # noqa: E402

KINDS = ("exit 0", "ci", "sleep, then stopped", "exit 3", "over its wall budget")


def disk(n) -> dict[str, int]:
    """Bytes under the node's state (its records' part of workspaces, its homes made ahead, the runs'
    clone and the git mirror's copy and work, which grow with the repository as every post does), the
    runs' own homes (systemd keeps DynamicUser's state in /var/lib/private), and the served repository."""
    state = n.config.state_dir
    places = {"node state (all)": state, "records' workspaces": state / "records", "homes made ahead": state / "spares",
              "the runs' clone": template_path(n.config), "the git mirror (D49)": state / "git",
              "the node user's clone": state / "node-clone.fossil",  # made at the first `ci` verdict (context.py)
              "runs' homes": Path("/var/lib/private") / RUNS_STATE_DIRECTORY,
              "the served repository": Path(n.config.repository)}
    sizes = {}
    for what, path in places.items():
        out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True).stdout.split()
        sizes[what] = int(out[0]) if out and out[0].isdigit() else 0
    return sizes


def journal_disk() -> str:
    said = subprocess.run(["journalctl", "--disk-usage"], capture_output=True, text=True).stdout
    found = re.search(r"take up (\S+)", said)
    return found.group(1) if found else said.strip()[:80]


def resident_kib(name: str) -> int:
    pid = inside.show(f"ocx-node@{name}.service", "MainPID")
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def answered(n) -> tuple[int, int, int]:
    """Records answered once, more than once, not (yet)."""
    found = scan(n)
    once = sum(1 for r in found if len(r["responses"]) == 1)
    return once, sum(1 for r in found if len(r["responses"]) > 1), sum(1 for r in found if not r["responses"])


def responses(n, record: str, timeout: float = 180) -> int:
    try:
        return len(wait_for(lambda: n.responses(record), timeout, 0.2, "its response"))
    except AssertionError:
        return 0


def one_record(n, kind: str, committer: Committer) -> int:
    """One record of KIND from its post to its response; how many responses it had then."""
    if kind == "ci":
        committer.branch, committer.first = f"day-{secrets.token_hex(3)}", True
        record = n.post(ci_record(n, committer.branch))
        wait_for(lambda: (n.config.state_dir / "records" / record / "record.json").exists(), 60, 0.2, "it open")
        checkin = committer.commit({"ci.py": "print('ran')\n"})
        try:
            wait_for(lambda: ci_values(n, checkin), 180, 0.3, "its check-in's verdict")
        except AssertionError:
            print(f"  no verdict on {checkin[:12]} in 180 s", flush=True)
        n.stop(record)
    elif kind == "sleep, then stopped":
        record = n.post(n.record(objective="sleep 1200", budget={"wall": "30m"}))
        wait_for(lambda: inside.timestamp(n.unit(record), "ExecMainStartTimestamp"), 180, 0.2, "its start")
        n.stop(record)
    elif kind == "over its wall budget":
        record = n.post(n.record(objective="sleep 600", budget={"wall": "2s"}))
    else:
        record = n.post(n.record(objective=kind))
    return responses(n, record)


def checkpoint(n, name: str, done: int, began: float) -> tuple[int, dict[str, int]]:
    inside.node_idle(name, 900)
    rss, sizes, (once, twice, none) = resident_kib(name), disk(n), answered(n)
    print(f"after {done} records ({time.monotonic() - began:.0f} s): node {inside.node_resident(name)}; disk "
          + ", ".join(f"{what} {size / 2**20:.1f} MiB" for what, size in sizes.items())
          + f"; journal {journal_disk()}; records answered once {once}, twice or more {twice}, not {none}"
          f"; load average {load()}", flush=True)
    return rss, sizes


def main(name: str, port: str, history: str, count: str = "2000", every: str = "200") -> None:
    n, records, every_n = set_up(name, port, history), int(count), int(every)
    committer = Committer(n, "day-first")
    n.barrier()  # the committer's login and clone made, the runner page read: the day starts here
    began = time.monotonic()
    first_rss, first_disk = checkpoint(n, name, 0, began)
    last_rss, last_disk, late, rss_seen = first_rss, first_disk, [], [first_rss]
    for i in range(records):
        kind = KINDS[i % len(KINDS)]
        if (got := one_record(n, kind, committer)) != 1:
            late.append(f"record {i + 1} ({kind}): {got} responses when first seen")
        if (i + 1) % every_n == 0 or i + 1 == records:
            last_rss, last_disk = checkpoint(n, name, i + 1, began)
            rss_seen.append(last_rss)
    growth = 100 * (last_rss - first_rss) / first_rss if first_rss else float("nan")
    # The first EVERY records warm the service up (its first check-in run, its first verdict): flat after?
    warm = 100 * (last_rss - rss_seen[1]) / rss_seen[1] if len(rss_seen) > 2 and rss_seen[1] else float("nan")
    print(f"a long day of {records} records ({', '.join(KINDS)} in turn) in {time.monotonic() - began:.0f} s: "
          f"the node's resident memory {first_rss / 1024:.1f} MiB at the first checkpoint, {last_rss / 1024:.1f} "
          f"at the last ({growth:+.1f} %, goal within 10 %; {warm:+.1f} % from the second checkpoint on); "
          "disk against the start: "
          + ", ".join(f"{what} {last_disk[what] - first_disk[what]:+d} bytes" for what in first_disk)
          + f"; records without exactly one response when first seen: {len(late)}"
          + (f" ({'; '.join(late[:10])})" if late else ""), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
