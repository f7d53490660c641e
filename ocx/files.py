"""Writing a file whole, the one way OCX does it: readers see the old file
or the new one, never half of it.

Standard library only: the privileged steps systemd runs per run (ocx.run_steps)
and the stop step's reader (ocx.systemd.stoppost) import it and must start fast.
"""
from __future__ import annotations

import os


def write_atomically(path: str | os.PathLike[str], text: str, mode: int = 0o644) -> None:
    """Write TEXT to PATH through a temporary beside it, then rename it over PATH."""
    path = os.fspath(path)
    directory, name = os.path.split(path)
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(temporary, mode)  # whatever the umask took away
    os.replace(temporary, path)
