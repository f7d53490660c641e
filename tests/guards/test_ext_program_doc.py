"""docs/tools.md and docs/operating.md say what the ext file `ocx node init`
writes really runs (ocx/setup/init.py, web_page_program, D30)."""
from __future__ import annotations

from . import scan


def test_the_docs_show_the_ext_program_init_writes() -> None:
    from ocx.setup.init import web_page_program

    written = web_page_program("/etc/ocx/NAME.json", "NAME")
    shebang, line = written.splitlines()
    assert shebang == "#!/bin/sh"
    assert line == "exec /usr/local/libexec/ocx-python --door page_door /etc/ocx/NAME.json /run/ocx/NAME/page.sock"
    assert f"`{line}`" in (scan.ROOT / "docs/tools.md").read_text()
    assert line.removeprefix("exec /usr/local/libexec/") in (scan.ROOT / "docs/operating.md").read_text()
