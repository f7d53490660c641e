"""A node's identity as it enters the server's list of nodes (D29, D36, D37):
its name, its node user and its server-code, checked in one place wherever
one can enter (an admin's `register`, a join token's `join`, a node user's
`code`, and again before a `grant`), so no way in checks less than another.

- A name is what its units' instance and /etc/ocx/NAME.json are made of.
- A node user is a Fossil login held to the login rules the records' `user`
  field holds (fields.py), ASCII only: no lookalike of another login (U+2011
  for '-'), no '/' or anything a path or a line could be made of.
- A server-code is a clone's: 40 (or 64) lower-case hex digits.
- Unique: never the served repository's own server-code or node user (a
  join naming the server's code would receive the passwords of the server's
  own runs, D37), never a special login, never another registered node's.

Pure: the caller passes what the repository holds. Standard library only
(the page imports it for a join, before pydantic).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import FieldError

# re.ASCII: `\w`-free classes already, and ASCII in case anyone adds one; fullmatch, never `$` (hashes.py).
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", re.ASCII)
NODE_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}", re.ASCII)  # fields._LOGIN's rule
CLONE_CODE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}", re.ASCII)
SPECIAL_LOGINS = frozenset({"nobody", "anonymous", "reader", "developer"})  # admission.SPECIAL_LOGINS (D40)


@dataclass(frozen=True)
class Claimed:
    """A node's identity as some node already holds it."""

    name: str
    node_user: str
    server_code: str | None


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NODE_NAME.fullmatch(name):
        raise FieldError("name", f"{name!r} is not a node's name (ASCII letters, digits, '.', '_', '-'; at most "
                                 "64, beginning with a letter or digit)")
    return name


def check_login(login: object) -> str:
    if not isinstance(login, str) or not NODE_LOGIN.fullmatch(login):
        raise FieldError("node_user", f"{login!r} is not a login a node user may have (ASCII letters, digits, "
                                      "'.', '_', '@', '+', '-'; at most 64, beginning with a letter or digit)")
    if login.lower() in SPECIAL_LOGINS:
        raise FieldError("node_user", f"{login!r} is one of Fossil's special logins (D40)")
    return login


def check_code(code: object) -> str | None:
    """None (a join's node, its clone made later) or a clone's server-code."""
    if code is not None and (not isinstance(code, str) or not CLONE_CODE.fullmatch(code)):
        raise FieldError("server_code", f"{code!r} is not a clone's server-code (40 or 64 lower-case hex digits)")
    return code


def check_identity(name: object, login: object, code: object, *, own_code: str, own_node_user: str,
                   others: Iterable[Claimed]) -> None:
    """FieldError naming the field unless NAME, LOGIN and CODE may be one node
    elsewhere's: well formed, and none of them the served repository's own
    node's (OWN_CODE, OWN_NODE_USER) or another registered node's (OTHERS,
    its own registration included or not: the same login is never "other")."""
    name, login, code = check_name(name), check_login(login), check_code(code)
    if login.casefold() == own_node_user.casefold():
        raise FieldError("node_user", f"{login!r} is the server's own node user (D29)")
    if code is not None and code == own_code:
        raise FieldError("server_code", f"{code} is the served repository's own server-code: it names the "
                                        "server's node (D29), never a node elsewhere")
    for other in others:
        if other.node_user == login:
            continue
        if other.node_user.casefold() == login.casefold():
            raise FieldError("node_user", f"{login!r} differs only in case from node {other.name}'s user "
                                          f"{other.node_user!r}")
        if other.name.casefold() == name.casefold():
            raise FieldError("name", f"node {other.name} ({other.server_code}) is registered already, as "
                                     f"{other.node_user}")
        if code is not None and other.server_code == code:
            raise FieldError("server_code", f"{code} is node {other.name}'s server-code already")
