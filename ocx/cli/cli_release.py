"""`ocx release`: staging a release, showing the links, accepting and rolling back, on the node
as root (D45-D48; docs/releases.md). The operations are ocx/node/releases'; this renders them."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from ..node.host_paths import RELEASES_DIRECTORY
from .say import say

if TYPE_CHECKING:
    from ..node.releases.links import Releases
    from ..node.releases.staging import SmokeRepository
    from .release_asked import Asked

release_app = typer.Typer(help="A node's releases (D45-D48): stage, show, accept, roll back.", no_args_is_help=True)

ROOT_OPTION = typer.Option(RELEASES_DIRECTORY, "--root", help="The releases' root.", hidden=True)
DRY_RUN = typer.Option(False, "--dry-run", help="Say what would be done, and do nothing.")
# Who asked (D46; cli/release_asked.py): the node's service passes the request it acts on.
REQUEST = typer.Option(None, "--request", help="The request post (its full hash) in the node's releases thread "
                                               "this carries out (the node's service gives it).")
NODE = typer.Option(None, "--node", help="The node whose releases thread is told (D46); default: the one here.")
BY = typer.Option(None, "--by", help="The login to name in the releases thread (default: root@HOST).")


def register(app: typer.Typer) -> None:
    from ..tools.registry import TOOLS
    from .cli_tools import tool_command

    # From anywhere, as a login (D22): the `release` tool, which asks the node on the record (D46).
    release_app.command("tool")(tool_command(TOOLS["release"]))
    # Their commands join release_app: a node elsewhere following (D48); where check-ins are read from (D45).
    from . import cli_release_follow, cli_release_source  # noqa: F401
    app.add_typer(release_app, name="release")


def _refuse(error: Exception) -> typer.Exit:
    say(f"ocx release: {error}", err=True)
    return typer.Exit(1)


def _asked(step: str, root: str, node: str | None, request: str | None, by: str | None,
           checkin: str | None = None) -> Asked:
    """Who asked STEP (release_asked.py): a request acted on before ends here; one this cannot
    carry out is answered refused in the releases thread."""
    from .release_asked import AlreadyActed, asked, refused_request

    try:
        return asked(step, root, node, request, by, checkin)
    except AlreadyActed as claimed:
        raise _completed(step, root, claimed.who, checkin) from None
    except (OSError, ValueError) as error:
        if request is not None:
            refused_request(step, root, node, request, str(error))
        raise _refuse(error) from None


def _told(who: Asked | None, step: str, done: str, root: str, release: str | None,
          why: str | None = None) -> str | None:
    """The outcome posted (D46); for a request, its claim then says it is answered (once.py)."""
    if who is None:
        return None
    from .release_asked import told

    posted = told(who, step, done, root, release, why)
    if posted is not None and who.request is not None:
        from ..node.releases.once import answered

        _cut_after(who, "posted")  # answered, and the claim not yet saying so: completion must find it
        answered(root, who.request, posted)
    return posted


# -- a request answered exactly once through kills (C4; node/releases/once.py) ------------------------

def _completed(step: str, root: str, who: Asked, checkin: str | None) -> typer.Exit:
    """A request claimed by an earlier command: completed and answered if that one was killed first."""
    from ..protocol.errors import OcxError
    from .release_asked import complete

    try:
        found = complete(step, root, who, checkin)
    except (OcxError, OSError, ValueError) as error:
        return _refuse(error)
    if found is None:
        say(f"ocx release: request {who.request} was acted on already")
    else:
        say(f"ocx release: request {who.request}, whose command ended before its answer: {found.done}"
            + (f", {found.why}" if found.why else f" {found.release}"))
    _move_services(root)  # a command killed after the move and before it moved them (D46, D47)
    return typer.Exit(0)


def _begin(who: Asked | None, step: str, root: str, releases: Releases) -> None:
    """For a request: its claim says STEP begins, with the links as they are; and the named points
    where a test cuts it (ocx/node/cut.py: only root writes /run/ocx-cut, never a request)."""
    if who is None or who.request is None or who.node is None:
        return
    from ..node.cut import cut_here
    from ..node.releases.once import begun

    begun(root, who.request, step, releases)
    node, request = who.node.name, who.request
    releases.cut = lambda point: cut_here(node, f"release-{point}", request)
    releases.cut("begun")


def _cut_after(who: Asked | None, point: str) -> None:
    if who is not None and who.request is not None and who.node is not None:
        from ..node.cut import cut_here

        cut_here(who.node.name, f"release-{point}", who.request)


def _wheel_source(wheel: str) -> tuple[str, Callable[[str], None]]:
    name = os.path.basename(wheel)
    if not (name.startswith("ocx-") and name.endswith(".whl")) or not os.path.isfile(wheel):
        raise ValueError(f"wheel: {wheel} is not a wheel of OCX (ocx-*.whl)")
    digest = hashlib.sha256()
    with open(wheel, "rb") as given:
        while chunk := given.read(1 << 20):
            digest.update(chunk)

    def fill(inputs: str) -> None:
        os.mkdir(os.path.join(inputs, "wheel"), 0o755)
        shutil.copyfile(wheel, os.path.join(inputs, "wheel", name))

    return digest.hexdigest(), fill


def _checkin_source(node: str | None, prefix: str) -> tuple[str, Callable[[str], None]]:
    """A check-in of the node's served repository (or of the release source it names) that passed its CI
    (D25, D45), written out by the Fossil layer as plain files for the build; nothing of it is run here."""
    from ..fossil.checkin_tree import write_checkin_tree
    from ..fossil.repository import Repository
    from ..node import config as node_config
    from ..node.host_paths import configured_nodes
    from ..reading.release_gate import passing_checkin

    names = [node] if node else configured_nodes()
    if len(names) != 1:
        raise ValueError(f"node: {len(names)} nodes here: name the one whose repository holds the check-in")
    from .cli_release_source import checkin_of_named_source

    named = checkin_of_named_source(names[0], prefix)  # a repository of OCX's source named for it (D45)
    if named is not None:
        return named
    config = node_config.load(names[0])
    repository_path = str(config.repository)
    if config.elsewhere:  # its clone cannot tell the verdicts' senders: the server's node judges (D37, D48)
        from ..node.server_link import ServerLink
        from ..reading.verdicts import resolve_checkin

        checkin = ServerLink.of_node(config).gate(prefix)
        with Repository(repository_path) as repository:
            resolve_checkin(repository, checkin)  # and its tree is read from the clone: it must hold it
    else:
        with Repository(repository_path) as repository:
            checkin = passing_checkin(repository, prefix)

    def fill(inputs: str) -> None:
        with Repository(repository_path) as repository:
            write_checkin_tree(repository, checkin, os.path.join(inputs, "source"))

    return checkin, fill


def _hidden() -> list[str]:
    """What the build must not see: each node's configuration, state, repository, sockets and named release
    source (D16, D45, D48)."""
    from ..node import config as node_config
    from ..node.host_paths import CONFIG_DIR, RUNTIME_ROOT, configured_nodes
    from ..node.releases.source import named_source
    from ..protocol.errors import OcxError

    hidden: set[str] = set()
    for name in configured_nodes():
        try:
            hidden.update(str(path) for path in node_config.load(name).own_paths())
            hidden.update(path for path in [named_source(name)] if path)  # a clone's logins, say (D45)
        except (OcxError, OSError, ValueError) as error:  # a broken file: the build is refused, named
            raise ValueError(f"node: {name}'s configuration: {error}") from None
    return sorted(hidden | {CONFIG_DIR, RUNTIME_ROOT})


def _configurations() -> list[str]:
    """Each node's configuration file here (/etc/ocx/NAME.json: no secret in it, D20), for the smoke."""
    from ..node import config as node_config
    from ..node.host_paths import configured_nodes

    return [str(node_config.config_path(name)) for name in configured_nodes()]


def _smoke_repositories() -> list[SmokeRepository]:
    """Each node's served repository here, which root copies without its secrets for the smoke's
    `status` step (fossil/secretless_copy.py), with the Fossil home of root's own runs for that node."""
    from ..node import config as node_config
    from ..node.host_paths import configured_nodes
    from ..node.releases.staging import SmokeRepository

    found = []
    for name in configured_nodes():
        config = node_config.load(name)
        if os.path.isfile(config.repository):  # a node set up whose repository is not there yet has none to copy
            found.append(SmokeRepository(name, str(config.repository), str(config.state_dir / "home")))
    return found


@release_app.command("stage")
def stage(
    wheel: str | None = typer.Option(None, "--wheel", help="A wheel of OCX (a first install from outside)."),
    checkin: str | None = typer.Option(None, "--checkin", help="A check-in of the served repository (or the "
                                                                "release source the node names, D45) whose counted ci "
                                                                "verdicts pass (D25)."),
    wheelhouse: str | None = typer.Option(None, "--wheelhouse", help="Where the build finds OCX's dependencies "
                                                                      "(else the current release's wheels)."),
    node: str | None = typer.Option(None, "--node", help="The node whose repository holds the check-in, and "
                                                          "whose releases thread is told (D46)."),
    dry_run: bool = DRY_RUN,
    root: str = ROOT_OPTION,
    request: str | None = REQUEST,
    by: str | None = BY,
) -> None:
    """Build a release offline as the build user, smoke it, and offer it as `next` (D45, D48)."""
    from ..node.releases.staging import BUILD_USER, Plan, Source, moving
    from ..node.releases.staging import stage as stage_release
    from ..protocol.errors import OcxError
    from ..setup.account import ensure

    if (wheel is None) == (checkin is None):
        say("ocx release stage: give one of --wheel FILE and --checkin HASH", err=True)
        raise typer.Exit(2)
    who = None if dry_run else _asked("stage", root, node, request, by, checkin)
    try:
        named, fill = _wheel_source(wheel) if wheel is not None else _checkin_source(node, str(checkin))
        source = Source(named, fill, wheelhouse)
        if dry_run:
            from ..node.releases.links import Releases

            plan = stage_release(Releases(root), source, 0, 0, _hidden(), dry_run=True)
            assert isinstance(plan, Plan)
            say(f"would build {named} from the wheels in {plan.wheels} as {BUILD_USER} in "
                f"{plan.build_unit.name} (no network, {plan.build_unit.memory_max} bytes, "
                f"{plan.build_unit.runtime_max_sec:.0f} s), smoke it, and offer it as next")
            return
        account, _ = ensure(BUILD_USER, os.path.join(root, "staged"), comment="OCX release builds (D48)",
                            create_home=False)
        with moving(root) as releases:
            _begin(who, "stage", root, releases)
            staged = stage_release(releases, source, account.uid, account.gid, _hidden(),
                                   configurations=_configurations(), repositories=_smoke_repositories())
        _cut_after(who, "moved")
    except (OcxError, OSError, ValueError) as error:
        _told(who, "stage", "refused", root, None, str(error))
        raise _refuse(error) from None
    assert not isinstance(staged, Plan)
    say(f"staged {staged.release}: checkin {staged.checkin}, digest {staged.digest}")
    for step, result in sorted(staged.smoke.items()):
        say(f"smoke {step}: {result}")
    say(f"next: {staged.release}")
    _told(who, "stage", "staged as next", root, staged.release)


@release_app.command("show")
def show(as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
         root: str = ROOT_OPTION) -> None:
    """The releases `current`, `previous` and `next` name, with their check-ins and smoke (D46)."""
    from ..node.releases.shown import described

    shown = described(root)
    if as_json:
        say(json.dumps(shown))
        return
    for link, facts in shown.items():
        if facts is None:
            say(f"{link}: none")
        elif "checkin" in facts:
            say(f"{link}: {facts['release']} checkin {facts['checkin']} digest {facts['digest']} "
                f"smoke {json.dumps(facts['smoke'])}")
        else:
            say(f"{link}: {facts['release']} ({facts['record']})")


@release_app.command("accept")
def accept(dry_run: bool = DRY_RUN, root: str = ROOT_OPTION, node: str | None = NODE, request: str | None = REQUEST,
           by: str | None = BY) -> None:
    """`next` becomes `current`, once its copy's digest is the one staged (D46, D48)."""
    from ..node.releases.links import PREVIEWS, Releases
    from ..node.releases.staging import moving
    from ..protocol.errors import OcxError

    who = None if dry_run else _asked("accept", root, node, request, by)
    try:
        if dry_run:
            links = Releases(root).links() if os.path.isdir(root) else {}
            if links.get("next") is None:
                raise ValueError("next: nothing is staged")
            if links.get("next") == links.get("current"):
                raise ValueError(f"next: {links['next']} is current already")
            after = str(links["next"])
            made = Releases(root).copy_made_at_stage(after) is not None
            taken = f"take root's copy made at stage ({PREVIEWS}/{after})" if made \
                else f"copy staged/{after} as root's own"
            say(f"would {taken}, check its digest, and make it current (previous: {links.get('current') or 'none'})")
            return
        with moving(root) as releases:
            _begin(who, "accept", root, releases)
            was = releases.link("current")
            accepted = releases.accept()
        _cut_after(who, "moved")
    except (OcxError, OSError, ValueError) as error:
        _told(who, "accept", "refused", root, None, str(error))
        raise _refuse(error) from None
    say(f"accepted {accepted}: current {accepted}, previous {was or 'none'}")
    moved = _move_services(root)
    _told(who, "accept", "accepted", root, accepted)
    _settle(root, move_again=not moved)


@release_app.command("rollback")
def rollback(dry_run: bool = DRY_RUN, root: str = ROOT_OPTION, node: str | None = NODE,
             request: str | None = REQUEST, by: str | None = BY) -> None:
    """`previous` becomes `current`, and `current` `previous` (D46)."""
    from ..node.releases.links import Releases
    from ..node.releases.staging import moving
    from ..protocol.errors import OcxError

    who = None if dry_run else _asked("rollback", root, node, request, by)
    try:
        if dry_run:
            links = Releases(root).links() if os.path.isdir(root) else {}
            if links.get("previous") is None:
                raise ValueError("previous: there is no release to roll back to")
            say(f"would make {links['previous']} current and {links.get('current') or 'none'} previous")
            return
        with moving(root) as releases:
            _begin(who, "rollback", root, releases)
            was = releases.link("current")
            back = releases.rollback()
        _cut_after(who, "moved")
    except (OcxError, OSError, ValueError) as error:
        _told(who, "rollback", "refused", root, None, str(error))
        raise _refuse(error) from None
    say(f"rolled back to {back}: current {back}, previous {was or 'none'}")
    moved = _move_services(root)
    _told(who, "rollback", "rolled back", root, back)
    _settle(root, move_again=not moved)


def _move_services(root: str) -> bool:
    """The node's services that started before `current` last moved moved onto it: after accept and roll-back
    before the post, so a record posted meanwhile waits on the node alone (D46, D47); whether that was done."""
    from ..node.releases.services import services_moved
    from ..protocol.errors import OcxError

    try:
        moved = services_moved(root)
    except (OcxError, OSError, ValueError) as error:
        say(f"ocx release: the node's services not moved onto current: {error}", err=True)
        return False
    for name, state in moved.items():
        say(f"restarted {name}: {state}")
    return True


def _settle(root: str, move_again: bool) -> None:
    """After the post: the services moved again if that failed before it, the releases nothing names removed."""
    from ..node.releases.services import after_move
    from ..protocol.errors import OcxError

    if move_again:
        _move_services(root)
    try:
        removed = after_move(root)
    except (OcxError, OSError, ValueError) as error:
        raise _refuse(ValueError(f"the links moved, and then: {error}")) from None
    for release in removed:
        say(f"removed {release}: no link, unit or open record names it")
