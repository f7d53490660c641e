"""`ocx attach RECORD` on the command line (C3, D32): ocx/cli/attach.py does the work."""
from __future__ import annotations

import sys

import typer

from .say import say


def attach(record: str = typer.Argument(..., help="The session record's hash, its first 10 or more hex digits, "
                                                "or its run's machine (machinectl list)."),
           login: str | None = typer.Option(None, "--login", help="Your Fossil login (D22)."),
           password_file: str | None = typer.Option(None, "--password-file",
                                                    help="A file whose first line is your password."),
           clone: str | None = typer.Option(None, "--clone",
                                            help="Your clone of the node's repository, made over HTTP."),
           at_node: str | None = typer.Option(None, "--at-node",
                                              help="The node's name; needed only when this host has several.")) -> None:
    """Attach to a session's terminal, as root on the node's host, with a login holding admin or setup (D32).

    You see what the program prints and your keys reach it; Ctrl-] detaches
    (so does the end of your input or the session's end). Then a post in the
    record's place, written as you, says who attached, when and for how long.
    """
    from ..node import config as node_config
    from ..protocol.errors import FieldError
    from ..tools.caller import caller_at_node
    from ..tools.credentials import credentials
    from .attach import attach_session, only_node
    from .cli_tools import terminal_password

    def refuse(field: str, why: str) -> None:
        say(f"refused: {field}: {why}", err=True)
        raise typer.Exit(1)

    try:
        node = at_node or only_node()
        ask = terminal_password if sys.stdin.isatty() else None
        given = credentials(login=login, password_file=password_file, clone=clone,
                            url=node_config.load(node).url, ask=ask)
        caller = caller_at_node(node, given.login, given.password)
    except FieldError as refused:
        refuse(refused.field, refused.why)
    except FileNotFoundError as error:
        refuse("node", f"no such node on this host: {error.filename} is missing")
    except (ValueError, OSError) as error:
        refuse("caller", str(error))
    with caller:
        try:
            done = attach_session(caller, record, say=lambda text: say(text, err=True))
        except FieldError as refused:
            refuse(refused.field, refused.why)
    if done.post is None:
        say(f"could not post the attachment ({done.error}); its text: {done.text}", err=True)
        raise typer.Exit(1)
    say(f"posted {done.post} in {done.session.record.kind} {done.session.record.place}: {done.text}", err=True)


def register(app: typer.Typer) -> None:
    app.command("attach")(attach)
