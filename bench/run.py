"""The node benchmark: `python bench/run.py [RECORDS]` from the repository's root.

It starts the systemd test container (as the tests do), sets a node up in
it with `ocx node init`, and runs bench/inside.py there. It prints figures
and asserts nothing; see docs/node.md for what they measure.
"""
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402

DRIVE = ["/opt/ocx/venv/bin/python", "/src/tests/node_system/drive.py"]


def main(records: str = "100") -> None:
    engine()
    container = SystemdContainer(build_image(), src=ROOT)
    container.start()
    try:
        began = time.monotonic()
        done = container.exec([*DRIVE, "init", "bench", "8484"])
        assert done.exit_code == 0, done.output
        print(f"node set up in {time.monotonic() - began:.1f} s")
        # The command queue first: the sessions' part ends by stopping 200 runs, which the node then answers.
        for part in (["inside_ci.py", "bench", "50"], ["inside_deliveries.py", "bench", "200"],
                     ["inside.py", "bench", records]):
            result = container.exec(["/opt/ocx/venv/bin/python", f"/src/bench/{part[0]}", *part[1:]])
            print(result.output.decode() if isinstance(result.output, bytes) else result.output)
    finally:
        container.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
