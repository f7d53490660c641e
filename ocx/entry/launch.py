"""The `ocx` program: Fossil's hook goes straight to its light path (D5).

`ocx hook` is started by Fossil for every batch of receipts; its start-up
is its whole cost, so it never imports Typer or pydantic.
"""
from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "hook":
        from .hook import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
