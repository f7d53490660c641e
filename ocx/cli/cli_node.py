"""`ocx node init` and `ocx demo`: setting a node up on this host (kept out
of cli.py, which stays the list of what OCX can do)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from .say import say

if TYPE_CHECKING:
    from ..setup.init import InitReport


def register(app: typer.Typer, node_app: typer.Typer) -> None:
    node_app.command("init")(node_init)
    node_app.command("remove")(node_remove)
    app.command("demo")(demo)


def node_init(
    name_argument: str | None = typer.Argument(None, metavar="NAME", help="The node's name (or --name)."),
    name: str | None = typer.Option(None, "--name",
                                    help="The node's name: its units' instance and /etc/ocx/NAME.json."),
    port: int | None = typer.Option(None, help="The Fossil server's port on 127.0.0.1 (a new node: 8080)."),
    repository: str | None = typer.Option(None, help="Adopt this repository file instead of making a new one."),
    account: str = typer.Option("fossil", help="The Unix account the Fossil server runs as (never root, D27)."),
    node_user: str = typer.Option("ocx-node", help="The node's own Fossil login (D20)."),
    admin: str = typer.Option("admin", help="The setup login of a new repository; with --server, an admin's "
                                            "login on the server."),
    public: bool | None = typer.Option(None, "--public/--local-only",
                                          help="The server listens on every address, so nodes elsewhere reach it "
                                               "(D36); default: as it was, 127.0.0.1 only for a new node."),
    server: str | None = typer.Option(None, help="Make a node elsewhere (D36) of the repository served at this "
                                                    "URL, e.g. http://server.example:8080."),
    admin_password_file: str | None = typer.Option(
        None, help="With --server: a file holding the admin's password (else it is asked on the terminal, "
                   "only when the node user is new or its password lost)."),
    token_file: str | None = typer.Option(
        None, help="With --server, instead of an admin's login: a file holding a join token an admin made for "
                   "NAME on the server's page ('-': read it from stdin). Never on the command line."),
    ask_token: bool = typer.Option(False, "--ask-token", help="With --server: ask the join token on the terminal."),
    replace: bool = typer.Option(False, "--replace", help="With --server and an admin's login: take NAME over from "
                                                          "the node registered under it (its open records are then "
                                                          "answered lost, D31)."),
) -> None:
    """Set up a node from nothing, as root, where PID 1 is systemd. Safe to run again."""
    from ..setup.init import InitError, InitOptions, init_node

    name = name or name_argument
    if not name or (name_argument and name_argument != name):
        say("ocx node init: give the node's name once, as NAME or --name NAME", err=True)
        raise typer.Exit(2)
    started = time.monotonic()
    try:
        if server is not None:
            if port is not None or repository is not None or public is not None:
                raise InitError("a node elsewhere serves no repository: --port, --repository and --public are "
                                "the server's node's")
            if admin_password_file is not None and (token_file is not None or ask_token):
                raise InitError("an admin's login or a join token: give one of them")
            if replace and (token_file is not None or ask_token):
                raise InitError("--replace goes with an admin's login: a join token replaces a node only when "
                                "the admin made it to replace one")
            report = _init_elsewhere(name, server, admin, admin_password_file,
                                     None if node_user == "ocx-node" else node_user, _join_token(token_file, ask_token),
                                     replace)
        else:
            if token_file is not None or ask_token or replace:
                raise InitError("a join token or --replace joins a node elsewhere: give --server URL too")
            report = init_node(InitOptions(name=name, port=port, repository=repository, server_account=account,
                                           node_user=node_user, admin_login=admin, public=public))
    except InitError as error:
        say(f"ocx node init: {error}", err=True)
        raise typer.Exit(1) from None
    for step in report.steps:
        say(("changed  " if step.changed else "ok       ") + step.what)
    if report.admin_login:
        say(f"admin login {report.admin_login}: password in {report.admin_password_file}")
    say(f"node {name} at {report.config.url}: "
               + ("set up" if report.changed else "nothing changed")
               + f" in {time.monotonic() - started:.1f} s")


def _join_token(token_file: str | None, ask: bool) -> Callable[[], str] | None:
    """How the join token is read, when one is given: a file, stdin or the terminal (never argv or env, D41)."""
    from ..setup.init import InitError

    if token_file is not None and ask:
        raise InitError("give the join token one way: --token-file PATH or --ask-token")
    if token_file is None and not ask:
        return None

    def read() -> str:
        import sys

        if ask:
            import getpass

            return getpass.getpass("the join token (made by an admin on the server's page): ").strip()
        if token_file == "-":
            return sys.stdin.readline().strip()
        try:
            from pathlib import Path

            return Path(str(token_file)).read_text().strip()
        except OSError as error:
            raise InitError(f"the join token's file: {error}") from None

    return read


def _init_elsewhere(name: str, server: str, admin: str, password_file: str | None, node_user: str | None,
                    join_token: Callable[[], str] | None = None, replace: bool = False) -> InitReport:
    from pathlib import Path

    from ..setup.elsewhere import ElsewhereOptions, init_elsewhere

    def admin_password() -> str:
        if password_file:
            return Path(password_file).read_text().strip()
        import getpass

        return getpass.getpass(f"{admin}'s password on {server} (asked once, kept nowhere): ")

    return init_elsewhere(ElsewhereOptions(name=name, server=server, admin_password=admin_password,
                                           admin_login=admin, node_user=node_user, join_token=join_token,
                                           replace=replace))


def node_remove(
    name: str = typer.Argument(..., metavar="NAME", help="The node elsewhere to take off the list."),
    at_node: str = typer.Option(..., "--at-node", help="The server's node on this host (its repository is read "
                                                       "and changed here, as root)."),
    login: str | None = typer.Option(None, help="An admin's login: the node's open records whose receipt plus "
                                                   "wall has passed are answered lost as it (D31)."),
    password_file: str | None = typer.Option(None, "--password-file", help="A file whose first line is that "
                                                                              "login's password."),
) -> None:
    """Take node NAME off the server's list (D36): its node user's letters withdrawn and its password
    replaced, its run users' letters withdrawn (C5), its open records answered lost when D31 allows."""
    from ..setup.leave import LeaveError, remove_node

    try:
        lines = remove_node(at_node, name, login, password_file, _answer_lost)
    except LeaveError as error:
        say(f"ocx node remove: {error}", err=True)
        raise typer.Exit(1) from None
    for line in lines:
        say(line)


def _answer_lost(at_node: str, login: str, password: str, records: list[str]) -> list[str]:
    """Each of RECORDS answered lost by LOGIN, the `stop` tool's way (D31): what it said of each."""
    from ..tools.caller import caller_at_node
    from ..tools.framework import run_tool
    from ..tools.registry import TOOLS

    said = []
    with caller_at_node(at_node, login, password) as caller:
        for record in records:
            done = run_tool(TOOLS["stop"], {"record": record, "lost": True}, caller)
            said.append(f"record {record}: answered lost by {login} ({done.result})" if done.stopped is None
                        else f"record {record}: not answered: {done.stopped.field}: {done.stopped.why}")
    return said


def demo(
    publish: int | None = typer.Option(None, help="Relay this port of the container to the server (contrib/demo.sh)."),
    container: str | None = typer.Option(None, help="The container this runs in, for the hints it prints."),
    wheelhouse: str | None = typer.Option(None, help="OCX's dependencies' wheels: install this source tree as the "
                                                     "node's first release from them (D45; contrib/demo.sh)."),
) -> None:
    """The main job: a node named `demo` on this host, and what it made."""
    from ..setup.demo import STEPS, Demo, run_demo, step_demonstrate
    from ..setup.init import InitError
    from .demo_release import step_first_release

    # The first release before the demonstration, so its records run on it (D45, D47).
    at = STEPS.index(step_demonstrate)
    try:
        done = run_demo(Demo(publish=publish, in_container=container, wheelhouse=wheelhouse),
                        [*STEPS[:at], step_first_release, *STEPS[at:]])
    except InitError as error:
        say(f"ocx demo: {error}", err=True)
        raise typer.Exit(1) from None
    total = sum(done.timings.values())
    say()
    say(f"demo ready in {total:.1f} s")
