"""Making check-ins in a person's own Fossil clone from trees written into a
private checkout (the way back, D50): `fossil` runs only through program.py.

Each check-in is made by the clone's own user (its `default-user`, which
`fossil clone` sets to the login that cloned): no `--user-override`, ever
(D21); the person's own `fossil push` later sends them as that login. No
sync happens here (`--nosync`): the clone is changed only by the commits.
`--hash` since a program writes files faster than Fossil's mtime check
sees; `--no-warnings` since Fossil would ask on a terminal about CR/LF or
binary files, and a git tree holds whatever its authors wrote.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ocx.fossil.fossil_failure import FossilError
from ocx.fossil.program import run_fossil

_NEW_VERSION = re.compile(r"^New_Version: ([0-9a-f]{40,64})$", re.MULTILINE)
_CHUNK = 200  # paths per `fossil add` / `fossil rm`: far below any argv limit


def fossil_date(seconds: int) -> str:
    """SECONDS since 1970 as `--date-override` takes it: UTC, to the second."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")


@dataclass(frozen=True)
class PrivateCheckout:
    """A checkout of CLONE in DIRECTORY, which only this program uses (a fresh temporary directory)."""

    clone: Path
    directory: Path
    home: Path  # Fossil's HOME for these runs (program.py)
    login: str

    def _fossil(self, *args: str) -> str:
        return run_fossil(list(args), home=self.home, cwd=self.directory, user=self.login).stdout

    @classmethod
    def open(cls, clone: Path, directory: Path, version: str, *, home: Path, login: str) -> PrivateCheckout:
        directory.mkdir(parents=True, exist_ok=True)
        checkout = cls(clone.resolve(), directory, home, login)
        checkout._fossil("open", "--force", "--nosync", str(checkout.clone), version)
        return checkout

    def close(self) -> None:
        """Forget the checkout in the clone (its list of checkouts); its files stay for the caller."""
        run_fossil(["close", "--force"], home=self.home, cwd=self.directory, user=self.login, check=False)

    def update(self, version: str) -> None:
        self._fossil("update", "--nosync", version)

    def add(self, paths: Iterable[str]) -> None:
        for chunk in _chunks(paths):
            # `./` first: a name that starts with `-` is still a name.
            self._fossil("add", "--dotfiles", "--force", "--allow-reserved", *(f"./{p}" for p in chunk))

    def remove(self, paths: Iterable[str]) -> None:
        for chunk in _chunks(paths):
            self._fossil("rm", "--soft", *(f"./{p}" for p in chunk))

    def commit(self, message_file: Path, *, branch: str | None, date: str | None) -> str:
        """Commit everything in the checkout with MESSAGE_FILE's text; BRANCH: a new branch; DATE: the
        check-in's time (an author's, older than its parent's perhaps). Returns the new check-in's hash."""
        options = [*(["--branch", branch] if branch else []), *(["--date-override", date] if date else [])]
        out = self._fossil("commit", "--nosync", "--hash", "--no-warnings", "--allow-empty", "--allow-older",
                           "-M", str(message_file), *options)
        made = _NEW_VERSION.search(out)
        if made is None:
            raise FossilError(["commit"], 0, out, "Fossil named no new check-in")
        return made.group(1)


def _chunks(paths: Iterable[str]) -> Iterable[Sequence[str]]:
    listed = list(paths)
    return (listed[at:at + _CHUNK] for at in range(0, len(listed), _CHUNK))
