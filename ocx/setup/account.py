"""The only place that runs `useradd`: the Fossil server's own Unix account (D27).

A system account with a home of its own (Fossil wants a writable HOME) and
no login shell. Already there: left exactly as it is.
"""
from __future__ import annotations

import pwd
import subprocess
from dataclasses import dataclass

USERADD = "/usr/sbin/useradd"
NOLOGIN = "/usr/sbin/nologin"


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    home: str


def find(name: str) -> Account | None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


def ensure(name: str, home: str, comment: str = "Fossil server of an OCX node",
           create_home: bool = True) -> tuple[Account, bool]:
    """The account NAME, made if missing; (account, whether it was made)."""
    found = find(name)
    if found is not None:
        return found, False
    done = subprocess.run(
        [USERADD, "--system", "--user-group", "--home-dir", home,
         "--create-home" if create_home else "--no-create-home", "--shell", NOLOGIN, "--comment", comment, name],
        capture_output=True, text=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    if done.returncode != 0:
        raise RuntimeError(f"useradd {name} exited {done.returncode}: {done.stderr.strip()}")
    made = find(name)
    assert made is not None
    return made, True
