"""The chaos benchmark (C4; docs/node.md, 'Faults'): `python bench/chaos.py [RECORDS] [SEED]` from the
repository's root.

It starts the systemd test container, sets up a node, and posts RECORDS
records of every kind through the web while the node's service is
SIGKILLed every 0.5-2 s, the Fossil server restarted four times and the
whole container once (tests/node_system/chaos.py). It prints the figure:
records answered exactly once, doubles, and how late the latest answer
came against its record's wall plus 30 s after the last fault. It asserts
nothing; the seed it prints replays the same run. With OCX_CHAOS_KEEP=1
the container is left running to look around in (`docker exec -it ID bash`).
"""
import json
import os
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402
from tests.node_system.chaos_host import chaos  # noqa: E402


def main(records: str = "200", seed: str | None = None) -> None:
    count = int(records)
    chosen = int(seed) if seed is not None else random.SystemRandom().randrange(1, 10**6)
    engine()
    container = SystemdContainer(build_image(), src=ROOT)
    container.start()
    try:
        report = chaos(container, "chaos", 8585, chosen, count, seconds=max(60.0, count * 0.6),
                       server_restarts=4, restart_at=0.5)
    finally:
        if os.environ.get("OCX_CHAOS_KEEP"):
            print(f"container {container.id[:12]} left running")
        else:
            container.stop()
    answered_once = report["answered"] - len(report["doubles"])
    print(json.dumps(report, indent=1))
    print(f"seed {chosen}: {answered_once} of {report['records']} records answered exactly once "
          f"({100 * answered_once / max(1, report['records']):.1f} %), {len(report['doubles'])} doubles, "
          f"{len(report['unanswered'])} unanswered; latest answer {report['max_after_bound_s']:+.1f} s against "
          f"its wall plus 30 s after the last fault; {report['kills']} kills of the node, "
          f"{report['server_restarts']} server restarts, 1 container restart; the node's service started "
          f"{report['node_starts']} times, {len(report['quiet_starts'])} in 20 s of quiet after")


if __name__ == "__main__":
    main(*sys.argv[1:])
