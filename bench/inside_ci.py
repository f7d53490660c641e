"""The command-record part of the node benchmark, inside the systemd container.

    python bench/inside_ci.py NAME [CHECKINS]

Pushes CHECKINS check-ins on one branch in a single push, so they all wait
in one CI record's queue, and prints the node's own time between one run's
end (its stop step's `ended` file) and the next run's start (the node's
`started` mark, written just before it asks systemd to start the unit).
Prints figures, asserts nothing.
"""
import json
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.node_system.drive import node  # noqa: E402
from tests.node_system.harness import wait_for  # noqa: E402


def main(name: str, count: str = "50") -> str:
    """Prints the figures; returns the one the issue asks (one run's end to the next one's start)."""
    n, count = node(name), int(count)
    branch = f"bench-{secrets.token_hex(2)}"
    record = n.post(n.record(runner="command", command=["python3", "-c", "print('ok')"], user=f"ci-{secrets.token_hex(3)}",
                             objective="bench", checkins=[branch], hears=[], budget={"wall": "1m"}))
    records = n.config.state_dir / "records" / record
    wait_for(lambda: (records / "record.json").exists(), 60, 0.2, "the record open")
    developer = n.login(f"bench-{secrets.token_hex(2)}", "gio")
    clone = n.clone_of(developer)
    checkout = clone.open_checkout(n.home / "bench-checkout")
    checkins = []
    for i in range(count):
        (checkout / "n.txt").write_text(str(i))
        checkins.append(clone.commit(checkout, f"bench {i}", branch=branch if i == 0 else None, push=False))
    began = time.monotonic()
    clone.push()
    wait_for(lambda: len(list(records.glob("verdict-*.json"))) >= count, 900, 0.5, "every verdict")
    took = time.monotonic() - began
    stems = [f"ocx-{n.server_code[:12]}-{record[:12]}-{c[:12]}" for c in checkins]
    at = lambda kind, stem: json.loads((records / f"{kind}-{stem}.json").read_text())["at"]  # noqa: E731
    ran = sorted(stems, key=lambda stem: at("started", stem))
    gaps = sorted(at("started", b) - at("ended", a) for a, b in zip(ran, ran[1:]))
    runs = [at("ended", s) - at("started", s) for s in stems]
    print(f"command record, {count} queued check-ins: all judged in {took:.1f} s; a run itself "
          f"(prepare + program) median {statistics.median(runs) * 1000:.0f} ms")
    print(f"run in the order committed: {ran == stems}")
    gap = f"median {statistics.median(gaps) * 1000:.0f} ms, max {gaps[-1] * 1000:.0f} ms (n={len(gaps)})"
    print(f"node's time from one run's end to the next one's start: {gap}")
    n.stop(record)
    return gap


if __name__ == "__main__":
    main(*sys.argv[1:])
