"""Who views the node's web page, and whether a request may change anything (D30, D43).

Everything the page's parts share of a request: the node it is for (its
configuration and page secret), the viewer Fossil authenticated, the
repository's base URL as the viewer reached it, and the token that binds a
form to the viewer's login session. web.py routes a request; the console
(console/), the tools (web_tools.py) and nodes elsewhere (web_nodes.py)
answer it, each reading the viewer here.
"""
from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ..fossil.repository import Repository
from ..node.host_paths import page_secret_path

if TYPE_CHECKING:
    from ..node.config import NodeConfig


@dataclass(frozen=True)
class Preview:
    """The page is the preview of a staged release at /ext/ocx-next (D46; page/preview.py): every
    page says so, every tool is a dry run, and nothing else changes."""

    release: str
    checkin: str


@dataclass(frozen=True)
class Node:
    """What the page knows of its node: its configuration file and page secret."""

    config_file: str | None
    repository: str | None  # the one Fossil serves (FOSSIL_REPOSITORY)
    preview: Preview | None = None

    @classmethod
    def from_argv(cls, argv: list[str], repository: str | None) -> Node:
        return cls(argv[0] if argv else None, repository)

    @cached_property
    def secret(self) -> bytes | None:
        if self.config_file is None:
            return None
        try:
            return page_secret_path(self.config_file).read_bytes().strip() or None
        except OSError:
            return None

    @cached_property
    def config(self) -> NodeConfig | None:
        """The node's NodeConfig, or None: a page installed for another repository knows nothing of this one."""
        if self.config_file is None:
            return None
        from ..node import config as node_config

        config = node_config.load_file(self.config_file)
        if self.repository and Path(config.repository).resolve() != Path(self.repository).resolve():
            return None
        return config


def base_url(env: Mapping[str, str]) -> str:
    """This repository's base URL as the viewer reached it: what precedes /ext."""
    script = env.get("SCRIPT_NAME", "")
    root = script[: script.find("/ext")] if "/ext" in script else ""
    return f"{env.get('REQUEST_SCHEME', 'http')}://{env.get('HTTP_HOST', '')}{root}"


def referer_allowed(env: Mapping[str, str]) -> bool:
    referer, base = env.get("HTTP_REFERER", ""), base_url(env)
    return bool(env.get("HTTP_HOST")) and (referer == base or referer.startswith(base + "/"))


def viewer(env: Mapping[str, str]) -> str:
    return env.get("FOSSIL_USER") or "nobody"


def session_of(env: Mapping[str, str]) -> str:
    """The viewer's login cookie, or "" when the viewer has none. Fossil
    names it `fossil-` and the first 16 digits of the login group's code, or
    else the project's (2.21 login.c login_cookie_name)."""
    repository = env.get("FOSSIL_REPOSITORY")
    if not repository:
        return ""
    with Repository(repository) as served:
        name = "fossil-" + (served.config("login-group-code") or served.project_code)[:16]
    for part in env.get("HTTP_COOKIE", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


def token(node: Node, env: Mapping[str, str]) -> str:
    """D43: the viewer's login and session, signed with the node's page secret."""
    if node.secret is None:
        return ""
    signed = f"{viewer(env)}\0{session_of(env)}".encode()
    return hmac.new(node.secret, signed, hashlib.sha256).hexdigest()


def refusal(env: Mapping[str, str], node: Node, given: str, *, dry_run: bool = False) -> str | None:
    """Why a POST may change nothing, or None when it may (D30, D43). In the preview (D46) only a
    tool's call is taken, and it is made a dry run by the page (DRY_RUN: web_tools.run_call)."""
    if node.preview is not None and not dry_run:
        return f"this is the preview of the staged release {node.preview.release}: it changes nothing (D46)"
    if not referer_allowed(env):
        return "a change is taken only from this repository's own pages (Referer, D30)"
    if node.secret is None:
        return "this node's page has no secret (ocx node init writes it), so it takes no change (D43)"
    if not given or not hmac.compare_digest(given.encode(), token(node, env).encode()):
        return "a change is taken only from OCX's own forms: this request has no valid token (D43)"
    return None
