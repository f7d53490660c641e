"""Root's filter between Fossil 2.21's export and `git fast-import` (D49, D41).

`fossil git export` runs `git` through /bin/sh, looked up in PATH; the node's export puts
first in that PATH a directory of root's own (in the node's 0700 state) holding a `git`
made by `make_filter` (git/program.py: git_in_front). For `git fast-import` it runs
`main`: it reads Fossil's stream and writes git's; every other command is the real git's.
What it does to the stream:

- a `data LEN` block is copied by its length, never looked into: a comment or a file
  holding `# rid=` or `committer ` is data;
- at each `# rid=RID` line, the committer line that follows must be exactly the one Fossil
  writes for the USER and EMAIL the node told it for RID (protocol/git_committer.py), and
  is written with both sanitized: a U card holding a line break, `<`, `>` or a forged
  address and date can neither stop git nor bend the line. A rid it was not told, or other
  bytes: it stops (fail closed), and the export fails as an export git refused does;
- Fossil writes a deleted file's `D NAME` line unquoted: a name holding a line break (an F
  card may hold one) would go on as commands of git's (a file, a commit, a branch reset) and
  one starting with '"' stops git. For a check-in deleting such a name the node was told its
  `D` names in Fossil's order (fossil/git_export.py: stream_facts); the filter checks the lines
  are exactly those and writes them quoted (protocol/git_committer.py: deletion_lines);
- a branch name git would refuse as a ref (Fossil's own sanitizing leaves `.lock` and a
  leading '.'), which stopped the import at its first check-in, is made one it takes;
- everything else is copied as it is, read in bounded pieces (a line longer than
  LINE_MAX is copied through in pieces, never interpreted).

It imports only the ocx package and the standard library, from where the node's code is,
never from the repository, a check-in or a run's places.
"""
from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from ..fossil import git_export
from ..protocol.errors import OcxError
from ..protocol.git_committer import (
    TIME_TAIL,
    StreamFacts,
    branch_ref,
    committer_line,
    deletion_lines,
    written_prefix,
)
from .program import git_in_front, start_git

FILTER_DIR = "export-git"  # in the export's HOME: root's, in the node's 0700 state
LINE_MAX = 64 * 1024
CHUNK = 64 * 1024
TOLD_NAME = "stream-facts"
_DATA = re.compile(rb"data ([0-9]{1,19})\n")
_RID = re.compile(rb"# rid=([0-9]{1,19})\n")
Committers = Mapping[int, tuple[bytes | None, bytes]]  # rid -> (user, email) as Fossil writes them


class Refused(OcxError, ValueError):
    """The stream is not what Fossil writes for what the node was told: nothing more goes to git."""


def _exactly(source: IO[bytes], count: int) -> bytes:
    """COUNT bytes of SOURCE (fewer only at its end)."""
    parts = []
    while count > 0:
        part = source.read(min(count, CHUNK))
        if not part:
            break
        parts.append(part)
        count -= len(part)
    return b"".join(parts)


def _copy(source: IO[bytes], sink: IO[bytes], count: int) -> None:
    while count > 0:
        part = source.read(min(count, CHUNK))
        if not part:
            raise Refused("the stream ends inside a data block")
        sink.write(part)
        count -= len(part)


def filter_stream(source: IO[bytes], sink: IO[bytes], facts: StreamFacts) -> int:
    """Fossil's stream from SOURCE to SINK with each committer line rewritten and the deletions
    FACTS names quoted (module doc); how many committer lines it rewrote. Raises Refused where it stops."""
    rewritten = 0
    deleting: list[bytes] | None = None  # the current check-in's deletions the node was told, until written
    while line := source.readline(LINE_MAX):
        if not line.endswith(b"\n"):  # a long line's piece: copied, the rest of the line too
            sink.write(line)
            while (piece := source.readline(LINE_MAX)) and not piece.endswith(b"\n"):
                sink.write(piece)
            sink.write(piece)
            continue
        if line.startswith(b"data "):
            size = _DATA.fullmatch(line)
            if size is None:
                raise Refused(f"a data command Fossil does not write: {line[:80]!r}")
            sink.write(line)
            _copy(source, sink, int(size.group(1)))
            continue
        if deleting is not None and line.startswith(b"D "):
            sink.write(_deletions(source, line, deleting))
            deleting = None
            continue
        if deleting is not None and line.startswith((b"commit ", b"blob\n", b"done\n")):
            raise Refused("a check-in's deletions are not the ones Fossil's query gave")
        if line.startswith(b"commit refs/heads/"):
            line = b"commit refs/heads/" + branch_ref(line[len(b"commit refs/heads/"):-1]) + b"\n"
        sink.write(line)
        if line.startswith(b"# rid="):
            rid = _RID.fullmatch(line)
            sink.write(_committer(source, line, facts.committers))
            deleting = facts.deletions.get(int(rid.group(1))) if rid else None
            rewritten += 1
    if deleting is not None:
        raise Refused("the stream ends before a check-in's deletions")
    return rewritten


def _deletions(source: IO[bytes], first: bytes, names: list[bytes]) -> bytes:
    """The node's `D` lines for the ones Fossil writes for NAMES, the first line FIRST read (module doc)."""
    written, safe = deletion_lines(names)
    if not written.startswith(first) or first + _exactly(source, len(written) - len(first)) != written:
        raise Refused("a check-in's deletions are not the ones Fossil's query gave")
    return safe


def _committer(source: IO[bytes], rid_line: bytes, told: Committers) -> bytes:
    """The node's committer line for the one Fossil writes after RID_LINE (module doc)."""
    rid = _RID.fullmatch(rid_line)
    if rid is None or int(rid.group(1)) not in told:
        raise Refused(f"a check-in the node was not told of: {rid_line[:80]!r}")
    user, email = told[int(rid.group(1))]
    expected = written_prefix(user, email)
    if _exactly(source, len(expected)) != expected:
        raise Refused(f"the committer of {rid_line.strip()!r} is not the one its manifest and user table give")
    tail = source.readline(32)
    if TIME_TAIL.fullmatch(tail) is None:
        raise Refused(f"the committer of {rid_line.strip()!r} ends in {tail!r}")
    return committer_line(user, email, tail)


def facts_text(facts: StreamFacts) -> str:
    """FACTS as the filter's file holds them: `c RID USER-HEX EMAIL-HEX` (`-`: no user) and `d RID NAME-HEX`."""
    lines = [f"c {rid} {'-' if user is None else user.hex()} {email.hex()}\n"
             for rid, (user, email) in sorted(facts.committers.items())]
    lines += [f"d {rid} {name.hex()}\n" for rid, names in sorted(facts.deletions.items()) for name in names]
    return "".join(lines)


def read_facts(text: str) -> StreamFacts:
    facts = StreamFacts()
    for line in text.splitlines():
        kind, rid, *values = line.split(" ")
        if kind == "c":
            facts.committers[int(rid)] = (None if values[0] == "-" else bytes.fromhex(values[0]),
                                          bytes.fromhex(values[1]))
        else:
            facts.deletions.setdefault(int(rid), []).append(bytes.fromhex(values[0]))
    return facts


def make_filter(directory: Path, facts: StreamFacts) -> Path:
    """DIRECTORY (root's, made 0700) holding a `git` that runs `main` with FACTS, for PATH's head."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    (directory / TOLD_NAME).write_text(facts_text(facts))
    code_root = Path(__file__).resolve().parents[2]  # the directory holding the ocx package now running
    code = (f"import sys; sys.path.insert(0, {str(code_root)!r}); from ocx.git.fast_import_filter import main; "
            f"sys.exit(main({str(directory / TOLD_NAME)!r}, sys.argv[1:]))")
    # -I: no PYTHON* variable, no user site, not the working directory (WORK) on sys.path.
    making = directory / "git.new"
    making.write_text(git_in_front(f"{shlex.quote(sys.executable)} -I -c {shlex.quote(code)}"))
    making.chmod(0o700)
    making.rename(directory / "git")
    return directory


def export(copy: Path, work: Path, addresses: Mapping[str, str], *, home: Path) -> str:
    """The node's export (fossil/git_export.py: export) with Fossil's stream through this filter."""
    return git_export.export(copy, work, addresses, home=home,
                             git_first=lambda facts: make_filter(home / FILTER_DIR, facts))


def main(told_path: str, args: list[str]) -> int:
    """`git fast-import ARGS...` as Fossil runs it, through the filter (module doc)."""
    facts = read_facts(Path(told_path).read_text())
    git = start_git(args)
    assert git.stdin is not None
    try:
        filter_stream(sys.stdin.buffer, git.stdin, facts)
        git.stdin.close()
    except Refused as refused:
        git.kill()  # before it ends on its own: a git that dies writes its marks, and Fossil would keep them
        git.wait()
        print(f"ocx: the export stopped, fail closed (D49): {refused}", file=sys.stderr, flush=True)
        return 1
    except BrokenPipeError:
        pass  # git ended first: its own words are on standard error, its status below
    return git.wait()
