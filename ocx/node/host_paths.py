"""Where a node keeps things on its host; standard library only, for the light steps
(the feeder imports it at every session's start: not even pathlib here)."""
from __future__ import annotations

TYPE_CHECKING = False  # typing's own costs an import too; mypy takes any TYPE_CHECKING as true
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

CONFIG_DIR = "/etc/ocx"
STATE_ROOT = "/var/lib/ocx"
RUNTIME_ROOT = "/run/ocx"
# The runs' own home directories: systemd's StateDirectory (D16) below /var/lib.
RUNS_STATE_DIRECTORY = "ocx-runs"
# The node's releases: immutable copies of OCX and the links that say which serves (D45-D47, node/releases).
RELEASES_DIRECTORY = f"{STATE_ROOT}/releases"


def page_secret_path(config_file: str | Path) -> Path:
    """The web page's secret (D43), beside the node's configuration file: only
    root and the Fossil server's account (which runs the page) read it."""
    from pathlib import Path

    return Path(config_file).with_suffix(".page-secret")


def node_socket_path(node: str) -> str:
    """The node service's socket (units/ocx-node@.socket): every poke goes here (D4, D27)."""
    return f"{RUNTIME_ROOT}/{node}/node.sock"


def page_socket_path(node: str) -> str:
    """The web page service's socket (units/ocx-page@.socket): its door hands requests here (D30)."""
    return f"{RUNTIME_ROOT}/{node}/page.sock"


def steps_socket_path(node: str) -> str:
    """The step service's socket (units/ocx-steps@.socket): a run's steps' door hands them here."""
    return f"{RUNTIME_ROOT}/{node}/steps.sock"


# The names of the environment a session's program keeps (D15): set by the
# unit's description (node_service/run_units.py), read by the feeder inside the run.
KEEP_ENVIRONMENT = "OCX_KEEP_ENVIRONMENT"


AWAKE_ROOT = "/run/ocx-node"


def awake_path(node: str) -> str:
    """A directory there while the node's service is up (from its start on): ocx-wake@NAME
    starts no process for a change then (units/ocx-wake@.service, serve.py). It is
    the service's RuntimeDirectory=: systemd makes it before the service's
    process starts, and removes it when the service stops, killed too."""
    return f"{AWAKE_ROOT}/{node}"


DEFAULT_NODE_USER = "ocx-node"  # D20's usual login (config.NodeConfig's default)


def configured_nodes(config_dir: str = CONFIG_DIR) -> list[str]:
    """The names of the nodes set up on this host (/etc/ocx/NAME.json): a
    command that is not told which node uses the one there is (readers, attach)."""
    import os

    try:
        return sorted(name[:-5] for name in os.listdir(config_dir) if name.endswith(".json"))
    except OSError:
        return []


def plain_config(name: str, config_dir: str = CONFIG_DIR) -> dict[str, Any]:
    """A node's configuration as its file holds it, unvalidated: for the light
    steps (the readers), which need only where its repository is and its
    node user, and not pydantic's start-up (config.load validates)."""
    import json

    with open(f"{config_dir}/{name}.json") as handle:
        found: dict[str, Any] = json.load(handle)
    return found


def node_of(repository: str, config_dir: str = CONFIG_DIR) -> str | None:
    """The node whose configuration names this repository file."""
    import json  # here: the feeder imports this module at every session's start
    import os

    wanted = os.path.realpath(repository)
    try:
        names = sorted(os.listdir(config_dir))
    except OSError:
        return None
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(config_dir, name)) as handle:
                config = json.load(handle)
        except (OSError, ValueError):
            continue
        if os.path.realpath(config.get("repository", "")) == wanted:
            node: str | None = config.get("name")
            return node
    return None


GIT_ROOT = "/var/lib/ocx-git"
GIT_SERVED_NAME = "repository.git"


def git_served_root(node: str) -> str:
    """The directory of the bare git repository the node serves at /ext/git (D49): root's,
    entered only by the Fossil server's group (ocx/git/mirror.py); the door's GIT_PROJECT_ROOT."""
    return f"{GIT_ROOT}/{node}"
