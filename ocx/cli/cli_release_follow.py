"""`ocx release follow` and `follow-step`: a node elsewhere following the server's accepted
release (D48; node/releases/following.py, docs/releases.md 'Nodes elsewhere').

`follow` is its admin's choice, written beside the node's configuration. `follow-step` is what
the node's service runs in a unit of its own for a move of the server it has not acted on
(node_service/release_following.py): it asks the server's node again what the move is (never
taking the command line's word for more than which post), claims the post once, and does the
same step here with this node's own stage, accept and roll-back, each posted in this node's own
releases thread naming the server's post it followed.
"""
from __future__ import annotations

import typer

from .cli_release import ROOT_OPTION, _asked, _refuse, _told, accept, release_app, rollback, stage
from .say import say


@release_app.command("follow")
def follow(node: str | None = typer.Option(None, "--node", help="The node elsewhere (default: the one here)."),
           off: bool = typer.Option(False, "--off", help="Stop following: stage and accept only on its admin's word.")
           ) -> None:
    """Make a node elsewhere follow the server's accepted release, or stop (D48)."""
    from ..node import config as node_config
    from ..node.host_paths import configured_nodes
    from ..node.releases.following import set_following

    names = [node] if node else configured_nodes()
    if len(names) != 1:
        raise _refuse(ValueError(f"node: {len(names)} nodes here: name one"))
    config = node_config.load(names[0])
    if not config.elsewhere:
        raise _refuse(ValueError(f"node: {config.name} is the server's own node: it has no server to follow"))
    path = set_following(config.name, not off)
    chosen = "stages and accepts on its admin's word only" if off else "follows the server"
    say(f"{config.name} {chosen}: {path}")


@release_app.command("follow-step", hidden=True)
def follow_step(post: str = typer.Option(..., "--post", help="The server's node's accept or roll-back post."),
                node: str = typer.Option(..., "--node", help="The node elsewhere that follows."),
                root: str = ROOT_OPTION) -> None:
    """The server's move POST done here once, on this node's own stage, accept or roll-back (D48)."""
    from ..node import config as node_config
    from ..node.releases.announce import claim
    from ..node.releases.following import follows, server_move
    from ..node.releases.links import Releases
    from ..node.server_link import ServerLink

    config = node_config.load(node)
    if not follows(config):
        raise _refuse(ValueError(f"node: {node} is not set to follow the server's releases (ocx release follow)"))
    found = server_move(ServerLink.of_node(config).releases())
    move = found.move
    if move is None or move.post != post:
        say(f"the server's last move is no longer {post}: nothing followed (a newer one is followed by its own)")
        return
    if not claim(root, post):
        say(f"the server's {move.step} {post} was followed already")
        return
    by = f"{found.node_user} (followed {found.server}'s {move.step} {post})"
    releases = Releases(root)
    links = releases.links()

    def checkin_of(link: str) -> str | None:
        release = links.get(link)
        try:
            return releases.staged(release).checkin if release else None
        except (OSError, ValueError, LookupError):
            return None

    if move.checkin is not None and checkin_of("current") == move.checkin:
        say(f"{links['current']} is current here, built from {move.checkin}: nothing to follow")
        return
    if move.step == "accept" and move.checkin is not None:
        stage(wheel=None, checkin=move.checkin, wheelhouse=None, node=node, dry_run=False, root=root, request=None,
              by=by)
        accept(dry_run=False, root=root, node=node, request=None, by=by)
        return
    if move.step == "rollback" and move.checkin is not None and checkin_of("previous") == move.checkin:
        rollback(dry_run=False, root=root, node=node, request=None, by=by)
        return
    why = ("checkin: the server's release names no check-in to build" if move.checkin is None else
           f"previous: no release here was built from {move.checkin}, the check-in the server rolled back to")
    _told(_asked(move.step, root, node, None, by), move.step, "refused", root, None, why)
    raise _refuse(ValueError(why))
