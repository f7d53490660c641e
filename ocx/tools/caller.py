"""The caller of a tool (D22): a Fossil login the server authenticates, and
where the tool reads and writes on its behalf.

Reads come from a repository file: the served repository itself on the
node's host (D29), which alone knows every artifact's sender (F2). Writes
reach the served repository over HTTP as the caller: forum posts and ticket
changes through Fossil's forms (web.py), tags and check-ins by sync
(sync.py, callers.py), so the server records the caller as the sender (D21).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..fossil.repository import Repository
from ..fossil.sync import CallerClone
from ..fossil.web import WebSession
from ..node.config import NodeConfig
from ..node.records import open_records
from ..protocol.decide import OpenRecord


@dataclass
class Caller:
    login: str
    password: str | None  # None: a caller that cannot write (a dry run still works)
    repository_path: Path  # the file the tools read
    base_url: str  # the served repository the tools write to
    node: NodeConfig | None = None  # set when the tools run on the node's host
    clone: CallerClone | None = None  # the caller's own clone that saved its password, for tags
    run_clone: Path | None = None  # a no_password run's clone (its tool socket sets it)
    # Reading the caller's own clone (off the node's host): pulled first; it
    # knows no senders (F2) and names its own user setup, so capabilities
    # are left to the server, which refuses a write the caller may not make.
    reads_clone: bool = False
    _web: WebSession | None = field(default=None, repr=False)
    _scratch: Path | None = field(default=None, repr=False)

    @property
    def where(self) -> str:
        return self.base_url

    def reading(self) -> Repository:
        if self.reads_clone and self.clone is not None and not getattr(self, "_pulled", False):
            self.clone.pull()
            self._pulled = True
        return Repository(self.repository_path)

    def resolve(self, prefix: str) -> str:
        with self.reading() as repository:
            return repository.resolve(prefix)

    def capabilities(self) -> frozenset[str] | None:
        """The caller's letters as Fossil expands them; None when only the server can tell."""
        if self.reads_clone:
            return None
        with self.reading() as repository:
            return repository.effective_capabilities(self.login)

    def server_code(self) -> str:
        """This node's name (C1): the node's repository, else the file read."""
        path = self.node.repository if self.node else self.repository_path
        with Repository(path) as repository:
            return repository.server_code

    # -- the caller as a run (C6) ------------------------------------------------

    def open_run(self) -> OpenRecord | None:
        """The open record on this node whose run acts as this caller, if any."""
        if self.node is None:
            return None
        for record_dir in open_records(self.node):
            opened, _ = record_dir.load()
            if opened.record.user == self.login:
                return opened
        return None

    # -- writing as the caller (D21) ---------------------------------------------

    def password_or_refuse(self) -> str:
        if self.password is None:
            raise PermissionError(f"no password for {self.login}: it can only make dry runs (D22)")
        return self.password

    def web(self) -> WebSession:
        if self._web is None:
            self._web = WebSession(self.base_url, self.login, self.password_or_refuse())
        return self._web

    def tag(self, checkin: str, name: str, value: str) -> str:
        """Tag CHECKIN (a full hash) as the caller; the tag change's hash. The
        web page's viewer has a session and no password (D30): the tag goes by
        sync in that session. Any other caller syncs a clone of its own."""
        if self._web is not None and self.password is None and self.clone is None:
            with self.reading() as repository:
                project_code = repository.project_code
            return self._web.push_tag(checkin, name, value, project_code)
        return self.tagging_clone().tag(checkin, name, value)

    def tagging_clone(self) -> CallerClone:
        """The caller's own clone, or a scratch one made for this call."""
        if self.clone is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="ocx-tool-"))
            self.clone = CallerClone.create(self._scratch / "caller.fossil", self.base_url, self.login,
                                            self.password_or_refuse(), home=self._scratch / "home")
        return self.clone

    def close(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch, self.clone = None, None

    def __enter__(self) -> Caller:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def caller_for(*, login: str | None = None, password_file: str | None = None, clone: str | None = None,
               node: str | None = None, repository: str | None = None, url: str | None = None,
               password: str | None = None) -> Caller:
    """The caller as D22 names it: a clone that saved its password (a
    person's, or a run's own `$HOME/repo.fossil`), or a login with a
    password file; on the node host, `node` names where to read and write."""
    from ..fossil.callers import saved_login
    from ..node.unit.prepare import PASSWORD_FILE
    from ..node import config as node_config

    config = node_config.load(node) if node else None
    clone_path = Path(clone).resolve() if clone else None  # fossil runs elsewhere: never a relative path
    if clone_path is None and login is None and password_file is None:
        own = Path(os.environ.get("HOME", "/nonexistent")) / "repo.fossil"  # a run's own clone (prepare.py)
        clone_path = own if own.is_file() else None
    saved = saved_login(clone_path) if clone_path else None
    beside = clone_path.parent / PASSWORD_FILE if clone_path else None
    if password_file is None and beside is not None and beside.is_file():
        # a run's own password (prepare.py): the clone may keep only the sync secret
        password_file = str(beside)
    if password_file:
        password = Path(password_file).read_text().splitlines()[0]
    elif saved is not None and password is None:
        password = saved.password
    login = login or (saved.login if saved else None) or os.environ.get("USER")
    if not login:
        raise ValueError("no login: give --login, --clone or --password-file (D22)")
    base_url = url or (config.url if config else None) or (saved.base_url if saved else None)
    read = repository or (config.repository if config else None) or (str(clone_path) if clone_path else None)
    if not base_url or not read:
        raise ValueError("say where: --node NAME on the node's host, or --url and --repository, or --clone")
    tagging = CallerClone(clone_path, login, Path(tempfile.mkdtemp(prefix="ocx-home-"))) if saved else None
    reads_clone = clone_path is not None and Path(read) == clone_path
    return Caller(login, password, Path(read), base_url, node=config, clone=tagging, reads_clone=reads_clone)
