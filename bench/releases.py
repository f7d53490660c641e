"""The releases' benchmark (D45-D47): `python bench/releases.py [RECORDS]` from the repository's root.

It starts the systemd test container (with the wheelhouse tests/container/build-image.sh built,
mounted read-only as the tests have it) and runs bench/releases_inside.py there, which sets a
node up by `ocx node init` and prints: a stage of the working tree's wheel with the image's
wheelhouse, and one from the current release's own wheels (seconds); from `ocx release accept`
to the first response of a session record posted right after, and to a record's program start
on the new release (goal <= 2 s); and RECORDS (20) records posted while an accept runs, each
answered once (responses counted per record). It asserts nothing: figures only.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from tests.container.systemd_container import SystemdContainer, build_image, engine, wheelhouse  # noqa: E402


def main(records: str = "20") -> None:
    if wheelhouse() is None:
        raise SystemExit("no wheelhouse: run tests/container/build-image.sh first")
    engine()
    container = SystemdContainer(build_image(), src=ROOT)
    container.start()
    try:
        done = container.exec(["/opt/ocx/venv/bin/python", "-u", "/src/bench/releases_inside.py", records],
                              workdir="/")
        print(done.output, end="")
    finally:
        container.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
