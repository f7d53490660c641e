"""Helpers for the boundary battery (D41; docs/security.md): hostile runs and hostile
check-ins, acted out on the real node in the systemd container."""
from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

from .harness import PYTHON, Node, wait_for

# Code that, imported by root, leaves a file only root can write (/run is
# read-only inside every run: ProtectSystem=strict): its absence shows root
# never imported it.
PLANT = 'import os\nwith open({marker!r}, "w") as out:\n    out.write(str(os.getuid()))\n'
# What `python -m ocx…` or a working directory on sys.path would import first.
PLANTED = ("ocx/__init__.py", "ocx/node/__init__.py", "ocx/run_steps/__init__.py", "ocx/run_steps/stop_step.py",
           "ocx/run_steps/prepare.py", "sitecustomize.py", "usercustomize.py")


def marker() -> Path:
    return Path(f"/run/ocx-battery-{secrets.token_hex(6)}")


def plants(where: Path, marker_path: Path) -> None:
    for name in PLANTED:
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PLANT.format(marker=str(marker_path)))


def runner(node: Node, name: str, program: str, homes: list[str] | None = None,
           keep: dict[str, list[str]] | None = None) -> str:
    """A runner page whose program is PROGRAM (Python source): it reads the
    first delivery line, then does what the source says."""
    source = "import os, sys\nfirst = sys.stdin.readline()\n" + program
    page = {"command": [PYTHON, "-c", source], "homes": homes or [], "keep": keep or {}, "env": {}}
    node.clone_of(node.admin).write_wiki(f"sandbox/{name}", f"# Runner {name}\n\n```json\n{json.dumps(page)}\n```\n")
    return name


def session(node: Node, runner_name: str, **fields) -> str:
    return node.post(node.record(runner=runner_name, **fields))


class Committer:
    """A real login committing files of its choice on one branch, from its own clone."""

    def __init__(self, node: Node, branch: str):
        self.login = node.login(f"dev-{secrets.token_hex(2)}", "gio")
        self.clone = node.clone_of(self.login)
        self.checkout = self.clone.open_checkout(node.home / f"co-{secrets.token_hex(3)}")
        self.branch, self.first = branch, True

    def commit(self, files: dict[str, str], message: str = "battery") -> str:
        for name, text in files.items():
            path = self.checkout / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (self.checkout / "nonce.txt").write_text(secrets.token_hex(8))  # every check-in differs
        branch = self.branch if self.first else None
        self.first = False
        return self.clone.commit(self.checkout, message, branch=branch)


def ci_record(node: Node, branch: str, **fields) -> dict:
    return node.record(**{"runner": "command", "command": ["python3", "ci.py"], "user": f"ci-{secrets.token_hex(3)}",
                          "objective": "battery", "checkins": [branch], "hears": [],
                          "budget": {"wall": "30s", "memory": "256M"}, **fields})


def open_command_record(node: Node, branch: str, **fields) -> str:
    record = node.post(ci_record(node, branch, **fields))
    wait_for(lambda: (node.config.state_dir / "records" / record / "record.json").exists(), 60, 0.2,
             "the command record open")
    return record


def ci_values(node: Node, checkin: str) -> list[str]:
    with node.repository() as repository:
        return [t.value for t in repository.tag_history(checkin, ["ci"]) if t.op == "+"]


# A check-in's build backend in its own tree (PEP 517 backend-path): the image holds no `wheel` (D45).
IN_TREE_BACKEND = '[build-system]\nrequires = []\nbuild-backend = "release_wheels"\nbackend-path = ["."]\n'
# A tree whose build asks for a backend (flit_core) that no wheelhouse of the tests holds.
FLIT_TREE = {"pyproject.toml": '[build-system]\nrequires = ["flit_core>=3.9"]\nbuild-backend = "flit_core.buildapi"\n'
                               '[project]\nname = "ocx"\nversion = "0.2.0"\n', "ocx/__init__.py": ""}


def ocx_tree(src: Path) -> dict[str, str]:
    """OCX's own tree from the source at SRC, its build backend in the tree (release_wheels.py)."""
    project = (src / "pyproject.toml").read_text()
    start, end = project.index("[build-system]"), project.index("\n[", project.index("[build-system]"))
    files = {str(path.relative_to(src)): path.read_text() for path in sorted((src / "ocx").rglob("*.py"))
             if "__pycache__" not in path.parts}
    return files | {"pyproject.toml": project[:start] + IN_TREE_BACKEND + project[end + 1:], "README.md": "OCX\n",
                    "release_wheels.py": (src / "tests" / "node_system" / "release_wheels.py").read_text()}


def passed_checkin(node: Node, branch: str, files: dict[str, str], seconds: float = 120) -> tuple[str, str]:
    """A check-in that passes by D25: FILES and a ci.py that prints "checked", committed on a new BRANCH by a
    login of its own, judged by the CI of an open command record; its `ci` verdict, sent by the node user (not
    its author, so counted), a pass; then the record stopped. The check-in and the record."""
    record = open_command_record(node, branch)
    checkin = Committer(node, branch).commit({**files, "ci.py": 'print("checked")\n'})
    wait_for(lambda: ci_values(node, checkin), seconds, 0.5, "the ci verdict")
    assert ci_values(node, checkin) == [f"pass: checked (against {record})"]
    node.stop(record)
    return checkin, record


def answers_a_plain_record(node: Node, runner_name: str) -> None:
    """The node still works: a new record is answered, and as it should be.

    How long that took is printed (the aim is within a second on a
    quiet machine), never asserted: a test does not fail on a time."""
    posted = time.monotonic()
    record = session(node, runner_name, objective="exit 0")
    response = node.response(record, timeout=90)
    print(f"\nthe next record, from its post to its response: {time.monotonic() - posted:.2f} s")
    assert response.outcome.value == "exited" and response.note.startswith("exit 0"), response.note
