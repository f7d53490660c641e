"""What each of a run unit's sandbox settings costs in CPU: `python bench/sandbox_cost.py [ROUNDS] [VARIANTS]`.

Starts the systemd test container (as the tests do) and runs bench/sandbox_cost_inside.py there.
It asserts nothing.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402


def main(*args: str) -> None:
    engine()
    container = SystemdContainer(build_image(), src=ROOT)
    container.start()
    try:
        result = container.exec(["/opt/ocx/venv/bin/python", "-u", "/src/bench/sandbox_cost_inside.py", *args])
        print(result.output)
    finally:
        container.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
