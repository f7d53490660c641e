"""The console's benchmark (docs/console.md, 'Fast'): `python bench/console.py [RECORDS] [LOOKS]` from the
repository's root.

It starts the systemd test container (as the tests do), copies
../shared/data/click.fossil into it (the file itself is never written),
and runs bench/console_inside.py there: a node adopts the copy, RECORDS
session records (100) are sent and left running, a few more end, and the
node's page is asked for LOOKS times (20) as an admin and as a person
without admin, whole and in parts: first with the ext program as it was
before the page service (`python -m ocx.page.web`, a process per request),
then as `ocx node init` installs it now (the door, through ocx-page@NAME).
It prints what each costs and asserts nothing; docs/console.md says what
the figures mean.
"""
import io
import os
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402

CLICK = ROOT.parent / "shared" / "data" / "click.fossil"
INSIDE = "/var/tmp/ocx-bench/click.fossil"


def copy_in(container: SystemdContainer, source: Path, target: str) -> None:
    """SOURCE, read here, as TARGET in the container (a copy: SOURCE is only read)."""
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w") as tar:
        tar.add(source, arcname=Path(target).name)
    container.exec(["mkdir", "-p", str(Path(target).parent)])
    container._c.get_wrapped_container().put_archive(str(Path(target).parent), packed.getvalue())


def main(records: str = "100", looks: str = "20") -> None:
    engine()
    container = SystemdContainer(build_image(), src=ROOT)
    container.start()
    try:
        copy_in(container, CLICK, INSIDE)
        done = container.exec(["/opt/ocx/venv/bin/python", "-u", "/src/bench/console_inside.py", INSIDE, records, looks])
        print(done.output)
    finally:
        container.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
