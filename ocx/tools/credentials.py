"""Who a caller is, where its node is, and its password, as people and runs
have them (D22). Nothing here writes anything anywhere.

- `--clone FILE`: a clone made over HTTP (`fossil clone --save-http-password
  URL FILE`): its last sync URL names the node's server and the login.
- `--url URL --login L`: nothing else; no repository file is read.
- inside a run that holds its password: nothing; its own `$HOME/repo.fossil`.

The password, first found of:
1. `--password-file F`, its first line;
2. a run's own `.ocx-password` beside its clone (the preparation writes it);
3. what the clone saved, while it still is the password: Fossil 2.21 keeps
   the password in `last-sync-pw` until the clone's first sync, and from
   then on only the SHA1 sync secret (fossil-facts.md). The secret syncs,
   but Fossil's login takes it no more than a wrong password (login.c checks
   SHA1(PROJECT/LOGIN/GIVEN) against it) and no request trades it for a
   login cookie, so a tool, which acts on the node's page in a session,
   needs the password itself;
4. asked for on a terminal, never echoed (the CLI only; MCP speaks on its
   standard input);
5. else none, and the answer says exactly what to give (`why`).
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..fossil.clone_facts import saved_login
from ..node.run_layout import PASSWORD_FILE
from ..node.spare import CLONE
from ..protocol.errors import OcxError

_SYNC_SECRET = re.compile(r"[0-9a-f]{40}")


class NoCaller(OcxError, ValueError):
    """Nothing says who or where the caller is: the message says what to give."""


@dataclass(frozen=True)
class Credentials:
    url: str
    login: str
    password: str | None
    why: str = ""  # when there is no password: exactly what to give


def run_clone() -> Path | None:
    """A run's own clone (the preparation's), when this is a run."""
    own = Path(os.environ.get("HOME", "/nonexistent")) / CLONE
    return own if own.is_file() else None


def credentials(*, login: str | None = None, password_file: str | None = None, clone: str | None = None,
                url: str | None = None, ask: Callable[[str], str] | None = None) -> Credentials:
    """The caller as the options name it; NoCaller when they name nobody or nowhere."""
    clone_path = Path(clone).resolve() if clone else None  # relative to where the person stands
    if clone_path is None and url is None and login is None and password_file is None:
        clone_path = run_clone()
    saved = None
    if clone_path is not None:
        if not clone_path.is_file():
            raise NoCaller(f"--clone {clone}: no such file")
        saved = saved_login(clone_path)
        if saved is None:
            raise NoCaller(f"--clone {clone}: this clone names no login and server (it was not cloned over HTTP "
                           "as a login): give --url URL and --login LOGIN")
    url = (url or (saved.base_url if saved else "")).rstrip("/")
    login = login or (saved.login if saved else None)
    if not url or not login:
        raise NoCaller("say who and where: --clone FILE (a clone made with fossil clone --save-http-password), "
                       "or --url URL with --login LOGIN, or --at-node NAME on the node's host")
    beside = clone_path.parent / PASSWORD_FILE if clone_path is not None else None
    if password_file:
        return Credentials(url, login, _first_line(Path(password_file)))
    if beside is not None and beside.is_file():
        return Credentials(url, login, _first_line(beside))
    kept = saved.password if saved is not None and saved.login == login else None
    if kept and not _SYNC_SECRET.fullmatch(kept):
        return Credentials(url, login, kept)
    if ask is not None:
        return Credentials(url, login, ask(f"Fossil password for {login} at {url}: "))
    why = (f"no password for {login}: give --password-file FILE (its first line your password), or run `ocx` "
           "on a terminal to be asked for it")
    if kept:
        why += (f"; {clone} keeps only Fossil's sync secret since its first sync (Fossil 2.21), which Fossil's "
                "login does not take")
    return Credentials(url, login, None, why + " (D22)")


def _first_line(path: Path) -> str:
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise NoCaller(f"--password-file {path}: {error.strerror}") from None
    if not lines or not lines[0]:
        raise NoCaller(f"--password-file {path}: its first line is empty")
    return lines[0]
