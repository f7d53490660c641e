"""What every step of the node needs, resolved once per pass."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..fossil.repository import Repository
from ..fossil.sync import CallerClone
from ..node.config import NodeConfig

if TYPE_CHECKING:  # imported when first used: a quiet node's pass that starts a run needs no HTTP client
    from ..fossil.web import WebSession
    from ..node.served import Elsewhere, Here


@dataclass
class NodeContext:
    config: NodeConfig
    server_code: str
    _web: WebSession | None = field(default=None, repr=False)
    _served: Here | Elsewhere | None = field(default=None, repr=False)

    @classmethod
    def load(cls, config: NodeConfig) -> NodeContext:
        """CONFIG with its `python` made the one this process's own release holds, by its directory
        (releases/ID/bin/python), when it runs from one: each run's unit names the release the node
        started it with, to its stop step (D47; ocx/node/releases/serving.py)."""
        from ..node.releases.serving import runs_python

        python = runs_python(config.python)
        if python != config.python:
            config = config.model_copy(update={"python": python})
        with Repository(config.repository) as repository:
            return cls(config, repository.server_code)

    @property
    def served(self) -> Here | Elsewhere:
        """What only the served repository knows (D37): this host's file, or the server's node (served.py)."""
        if self._served is None:
            from ..node.served import served

            self._served = served(self.config)
        return self._served

    @property
    def fossil_home(self) -> Path:
        """HOME for the node's own `fossil` runs (its ~/.fossil lives there)."""
        return self.config.state_dir / "home"

    def web(self) -> WebSession:
        """The node user's web session, logged in on first use (D20)."""
        if self._web is None:
            from ..fossil.web import WebSession

            self._web = WebSession(self.config.url, self.config.node_user, self.config.node_password())
        return self._web

    def node_clone(self) -> CallerClone:
        """The node user's own clone, for what it writes by sync: `ci` verdicts (D20, V1)."""
        path = self.config.state_dir / "node-clone.fossil"
        if path.exists():
            return CallerClone(path, self.config.node_user, self.fossil_home)
        self.fossil_home.mkdir(mode=0o700, parents=True, exist_ok=True)
        clone = CallerClone.create(path, self.config.url, self.config.node_user, self.config.node_password(),
                                   home=self.fossil_home)
        os.chmod(path, 0o600)  # its sync secret is the node user's login to Fossil (docs/security.md, 'Class 5')
        return clone

    def log(self, message: str, *, record: str | None = None, priority: int = 6) -> None:
        """A line in the journal with the record's hash as a field (issue: inspection)."""
        from ..systemd import journal

        fields = {"OCX_NODE": self.server_code}
        if record:
            fields["OCX_RECORD"] = record
        try:
            journal.send(message, priority, **fields)
        except OSError:
            print(f"ocx node: {message}" + (f" [{record}]" if record else ""), flush=True)
