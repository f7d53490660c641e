"""The benchmark of a node elsewhere (D36, D38): `python bench/elsewhere.py [RECORDS] [busy]`.

It starts two systemd containers on one Docker network, as
tests/elsewhere does (the server host with the server's node and its
Fossil server; a build host with a node elsewhere, set up by
`ocx node init --server`), then posts RECORDS session records for the build
host through the server's web forms, one at a time on a quiet pair (each
answered, then both nodes' services idle, before the next: the build
node's runs' clone then holds the answers, as after any quiet while; with
`busy`, each posted once the last is answered, as before 2026-12-04), and
prints, from the server's receipt of each record (rcvfrom, its clock and
the build host's are the same kernel's):

- to the run's unit starting on the build host (InactiveExitTimestamp): the
  follower's held request answered and its pull (to its hand-over), the
  poke, the node's pass;
- to the run's program starting (ExecMainStartTimestamp): plus the run
  user granted by the server's node and the run's clone made (target: median <= 1 s);
- each leg of that way (the node's journal, the preparation's mark).

It asserts nothing.
"""
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from tests.elsewhere.hosts import Hosts, on, wait_until  # noqa: E402


def figures(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return (f"median {statistics.median(values) * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms, "
            f"min {values[0] * 1000:.0f} ms, max {values[-1] * 1000:.0f} ms (n={len(values)})")


def compiled() -> None:
    """Bytecode for every module, as an installed node has it: the container mounts the source
    read-only, so a module without it is compiled again on every Python start (each run's steps)."""
    import compileall

    compileall.compile_dir(str(source() / "ocx"), quiet=1)


def source() -> Path:
    """The tree both hosts run as /src: this one, or OCX_BENCH_SRC's (bench/compare.py's other tree)."""
    return Path(os.environ.get("OCX_BENCH_SRC") or ROOT)


def main(records: str = "20", busy: str = "") -> None:
    compiled()
    hosts = Hosts(src=source())
    try:
        began = time.monotonic()
        codes = hosts.start()
        print(f"two hosts up and both nodes set up in {time.monotonic() - began:.1f} s")
        build = codes["build_code"]
        to_unit, to_program = [], []
        # The way, step by step: receipt -> the node's "started" (held request answered, pull, poke, its pass
        # up to the unit's start job) -> the unit's start -> its preparation's start -> the run user granted
        # by the server's node -> the preparation's end (the run's clone made) -> the program.
        legs: dict[str, list[float]] = {"handed": [], "decided": [], "unit": [], "preparing": [], "granted": [],
                                        "cloned": [], "program": []}
        for _ in range(int(records)):
            if busy != "busy":  # a quiet pair: nothing pending on either node
                for host, name in ((hosts.server, "srv"), (hosts.build, "build1")):
                    wait_until(lambda: on(host, "idle", name)["idle"], 120, f"node {name} idle")
            # A session that waits: its unit's timestamps are read while it lives, then it is stopped.
            record = on(hosts.server, "post", json.dumps({"node": build, "objective": "sleep"}))["record"]
            unit = f"ocx-{build[:12]}-{record[:12]}.service"
            started = wait_until(lambda: (lambda s: s if s["program"] else None)(on(hosts.build, "started", unit)),
                                 120, "its program's start")
            received = on(hosts.server, "receipt", record)["at"]
            steps = on(hosts.build, "steps", unit, record)
            prepared = steps["prepared"]
            handed = min((at for at in steps["handed"] if at >= received), default=None)
            if steps["decided"] and prepared and handed:
                begun = prepared["at"] - prepared["seconds"]
                points = [received, handed, steps["decided"], started["unit"], begun,
                          begun + prepared["user_seconds"], prepared["at"], started["program"]]
                for name, before, after in zip(legs, points, points[1:]):
                    legs[name].append(after - before)
            on(hosts.server, "stop", build, record)
            wait_until(lambda: on(hosts.server, "answers", record)["responses"], 120, "its answer")
            to_unit.append(started["unit"] - received)
            to_program.append(started["program"] - received)
        print(f"server receipt to the unit's start on the build host: {figures(to_unit)}")
        print(f"server receipt to the program's start on the build host: {figures(to_program)}")
        names = {"handed": "receipt to the follower's hand-over (its held request answered, its pull)",
                 "decided": "to the node's start of the unit (the poke, the pass)",
                 "unit": "to systemd's start of its job", "preparing": "to its preparation's start",
                 "granted": "the run user granted by the server's node", "cloned": "the run's clone and checkout",
                 "program": "to the program's start"}
        for name, values in legs.items():
            if values:
                print(f"  {names[name]}: {figures(values)}")
    finally:
        hosts.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
