"""A node's configuration: where its repository is served and kept (D29).

It is not state (D2): `ocx node init` writes it once, in /etc/ocx/NAME.json,
and nothing a run does changes it. The node user's password sits beside it,
readable only by root (D20).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from . import host_paths
from .host_paths import page_secret_path  # noqa: F401  (init, the page's tests)

CONFIG_DIR = Path(host_paths.CONFIG_DIR)
STATE_ROOT = Path(host_paths.STATE_ROOT)
RUNTIME_ROOT = Path(host_paths.RUNTIME_ROOT)
RUNS_STATE_DIRECTORY = host_paths.RUNS_STATE_DIRECTORY


class NodeConfig(BaseModel):
    # Errors name the field and why, never the value given: a forge's URL may hold a token by mistake (D41).
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    name: str  # the instance name of the node's units, e.g. ocx-node@NAME.service
    repository: str  # the served repository file (D29)
    url: str  # the Fossil server's base URL; runs clone from it (D16)
    node_user: str = host_paths.DEFAULT_NODE_USER  # D20
    server_account: str = "fossil"  # the Unix account the Fossil server runs as (D27)
    cpu_quota: float = 1.0  # D17: the node's own per-run CPU rate, in CPUs
    # Runs' homes the idle node keeps made ahead (node/spare.py; docs/node.md, 'Runs' homes made ahead'),
    # each a copy of the repository and a checkout: so many records at once start without making their own.
    spare_homes: int = Field(default=4, ge=0)
    python: str = "/opt/ocx/venv/bin/python"  # runs OCX's steps inside units
    # D36: a node elsewhere works from a clone (`repository`) of the one served at `url`,
    # learns senders from the server's node (D37) and is woken by its follower (D38).
    elsewhere: bool = False
    # The server's node only: its Fossil server listens on every address, not 127.0.0.1 alone,
    # so nodes elsewhere (and people) reach it (Fossil 2.21 binds one or all).
    public: bool = False
    # D50: git remotes (forges' mirrors) the node pushes its git mirror (D49) to after each update,
    # as https:// or http:// URLs naming no login: credentials only in git_credentials_file (D41).
    git_forges: tuple[str, ...] = ()

    @field_validator("git_forges")
    @classmethod
    def _forge_urls(cls, urls: tuple[str, ...]) -> tuple[str, ...]:
        for at, url in enumerate(urls):  # never echoed: a URL may hold a token by mistake (D41)
            parts = urlsplit(url)
            if parts.scheme not in ("https", "http") or not parts.hostname or len(url) > 2000 \
                    or any(ord(c) <= 32 or ord(c) == 127 for c in url):
                raise ValueError(f"entry {at}: not an https:// or http:// URL of a git remote")
            if "@" in parts.netloc or parts.query or parts.fragment:
                raise ValueError(f"entry {at}: a URL with a login, query or fragment; credentials go in the"
                                 " node's git-credentials file (D50)")
        return urls

    @property
    def git_credentials_file(self) -> Path:
        """The forges' credentials, git-credential-store's format, root's alone (D50, ocx/git/forges.py)."""
        return CONFIG_DIR / f"{self.name}.git-credentials"

    @property
    def state_dir(self) -> Path:
        return STATE_ROOT / self.name

    @property
    def runtime_dir(self) -> Path:
        return RUNTIME_ROOT / self.name

    def own_paths(self) -> list[Path]:
        """What is the node's and never a run's (D16): its repository's directory,
        its state, its configuration and secrets, its sockets, the git repository it serves (D49)."""
        return [Path(self.repository).resolve().parent, self.state_dir, CONFIG_DIR, RUNTIME_ROOT,
                Path(host_paths.git_served_root(self.name))]

    @property
    def extroot(self) -> Path:
        """The Fossil server's --extroot: the tools' web page, `ocx` (D30)."""
        return CONFIG_DIR / "ext" / self.name

    @property
    def password_file(self) -> Path:
        return CONFIG_DIR / f"{self.name}.node-password"

    def node_password(self) -> str:
        return self.password_file.read_text().strip()


def config_path(name: str) -> Path:
    return CONFIG_DIR / f"{name}.json"


def load_file(config_file: Path | str) -> NodeConfig:
    return NodeConfig.model_validate_json(Path(config_file).read_text())


def configured_nodes(config_dir: Path | None = None) -> list[str]:
    """The names of the nodes set up on this host: a command that is not told
    which node uses the one there is (readers, attach)."""
    return host_paths.configured_nodes(str(config_dir or CONFIG_DIR))


def load(name: str) -> NodeConfig:
    return load_file(config_path(name))


def save(config: NodeConfig, node_password: str | None = None) -> Path:
    CONFIG_DIR.mkdir(parents=True, exist_ok=True)
    path = config_path(config.name)
    path.write_text(json.dumps(config.model_dump(), indent=2) + "\n")
    if node_password is not None:
        fd = os.open(config.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(node_password + "\n")
    return path
