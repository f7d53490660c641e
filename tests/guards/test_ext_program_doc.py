"""docs/tools.md and docs/operating.md say what the ext file `ocx node init`
writes really runs (ocx/setup/init.py, web_page_program, D30)."""
from __future__ import annotations

from pathlib import Path

from . import scan


def test_the_docs_show_the_ext_program_init_writes() -> None:
    from ocx.setup.init import web_page_program

    written = web_page_program("/opt/ocx/venv/bin/python", "/etc/ocx/NAME.json", "NAME")
    shebang, line = written.splitlines()
    door = line.split()[4]
    assert shebang == "#!/bin/sh" and Path(door).name == "page_door.py" and Path(door).parent.name == "page"
    shown = line.replace(str(Path(door).parent.parent.parent), "…")  # the installed package's path, elided
    assert shown == "exec /opt/ocx/venv/bin/python -I -S …/ocx/page/page_door.py /etc/ocx/NAME.json /run/ocx/NAME/page.sock"
    assert f"`{shown}`" in (scan.ROOT / "docs/tools.md").read_text()
    assert shown.removeprefix("exec /opt/ocx/venv/bin/") in (scan.ROOT / "docs/operating.md").read_text()
