"""The deliveries part of the node benchmark, inside the systemd container.

    python bench/inside_deliveries.py NAME [POSTS]

Posts POSTS replies into a live session's thread as fast as the server
takes them, and prints from each post's receipt (rcvfrom) to its delivery
line on the session's standard input. The session program echoes each line
as it reads it; the time taken is the journal's receipt of that echo
(__REALTIME_TIMESTAMP), so the figure is an upper bound. Asserts nothing.
"""
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.node_system.drive import node  # noqa: E402
from tests.node_system.harness import wait_for  # noqa: E402


def echoed(unit: str) -> dict[str, float]:
    out = subprocess.run(["journalctl", "-u", unit, "-o", "json", "--no-pager"], capture_output=True, text=True).stdout
    seen = {}
    for line in out.splitlines():
        entry = json.loads(line)
        message = entry.get("MESSAGE")
        if isinstance(message, str) and message.startswith("delivery "):
            seen[json.loads(message.removeprefix("delivery "))["hash"]] = int(entry["__REALTIME_TIMESTAMP"]) / 1e6
    return seen


def main(name: str, count: str = "200") -> str:
    """Prints the figures; returns receipt to delivery's."""
    n, count = node(name), int(count)
    record = n.post(n.record(objective="echo", budget={"wall": "10m"}))
    unit = n.unit(record)
    wait_for(lambda: record in echoed(unit), 120, 0.2, "the session's first delivery")
    web = n.admin.web(n.url)
    posted = [web.reply(record, f"bench post {i}") for i in range(count)]
    wait_for(lambda: all(p in echoed(unit) for p in posted), 300, 0.5, "every post delivered")
    seen = echoed(unit)
    with n.repository() as repository:
        delays = sorted(seen[p] - repository.sender(p).time.timestamp() for p in posted)
    p99 = delays[min(len(delays) - 1, int(round(0.99 * (len(delays) - 1))))]
    delivered = f"median {statistics.median(delays) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {delays[-1] * 1000:.0f} ms"
    in_order = [h for h in seen if h in set(posted)] == posted
    print(f"burst of {count} posts into a session's thread: receipt to its delivery line on stdin: {delivered}")
    print(f"delivered in the order posted: {in_order}")
    n.stop(record)
    return f"{delivered}; in the order posted: {in_order}"


if __name__ == "__main__":
    main(*sys.argv[1:])
