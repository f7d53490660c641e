"""The `ocx` program: what must start fast goes straight to its own light path.

`ocx hook` is started by Fossil for every batch of receipts, and `ocx node
serve` by systemd on a quiet node when a record arrives: their start-up is
part of what a person waits for (D5; docs/node.md, 'The readers'), so neither imports Typer or
the tools' models. Nor do the readers (`verdicts`, `queue`, `activity`):
they are defined with argparse (cli/cli_reading.py). `ocx release accept`
and `rollback` run their own sub-command alone (cli/cli_release.py), without
the tools. Everything else is the whole command line.
"""
from __future__ import annotations

import sys

READERS = ("verdicts", "queue", "activity")  # cli/cli_reading.py parsers(), named here to import nothing more


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from ..hook.after_receive import main as hook_main

        sys.exit(hook_main(argv[1:]))
    if argv[:2] == ["node", "serve"] and len(argv) == 3 and not argv[2].startswith("-"):
        from ..node_service.serve import serve_forever

        serve_forever(argv[2])
        sys.exit(0)
    if argv[:1] == ["release"] and argv[1:2] in (["accept"], ["rollback"]):
        # A move's own command line (an admin's, or a request's unit): its start is in accept's time to an
        # answer on the new release (D46), and the tools' models are no part of it.
        from .cli_release import release_app

        release_app(args=argv[1:], prog_name="ocx release")
        sys.exit(0)
    if argv[:1] and argv[0] in READERS:
        from .cli_reading import main as readers_main

        sys.exit(readers_main(argv))
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
