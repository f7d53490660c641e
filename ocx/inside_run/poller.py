"""The feeder's wait on its descriptors: epoll, through the C module alone.

`selectors` and `socket` cost the feeder about half of its imports (collections, enum, math),
paid by every session's start (docs/node.md, 'A feeder with fewer imports'); this keeps what
the feeder and its terminal ask of a selector, and no more: register, modify and unregister a
descriptor (or anything with `fileno()`) with the data to hand back, and one wait for what is
ready. Standard library only: it runs as the run's user, inside its unit.
"""
from __future__ import annotations

import select

TYPE_CHECKING = False  # typing's own costs an import too; mypy takes any TYPE_CHECKING as true
if TYPE_CHECKING:
    from typing import Any, Protocol

    class HasFileno(Protocol):
        def fileno(self) -> int: ...

EVENT_READ = 1
EVENT_WRITE = 2
# What epoll says of a peer gone or an error counts as readable: the read then sees it, as selectors does.
_READABLE = select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR
_WRITABLE = select.EPOLLOUT | select.EPOLLHUP | select.EPOLLERR


class Key:
    """What a registration hands back with its events: its descriptor and its data."""

    __slots__ = ("data", "fd")

    def __init__(self, fd: int, data: Any) -> None:
        self.fd = fd
        self.data = data


def _fd(fileobj: int | HasFileno) -> int:
    return fileobj if isinstance(fileobj, int) else fileobj.fileno()


def _mask(events: int) -> int:
    return (select.EPOLLIN if events & EVENT_READ else 0) | (select.EPOLLOUT if events & EVENT_WRITE else 0)


class Poller:
    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._keys: dict[int, tuple[Key, int]] = {}

    def register(self, fileobj: int | HasFileno, events: int, data: Any = None) -> None:
        fd = _fd(fileobj)
        self._epoll.register(fd, _mask(events))
        self._keys[fd] = (Key(fd, data), events)

    def modify(self, fileobj: int | HasFileno, events: int, data: Any = None) -> None:
        fd = _fd(fileobj)
        self._epoll.modify(fd, _mask(events))
        self._keys[fd] = (Key(fd, data), events)

    def unregister(self, fileobj: int | HasFileno) -> None:
        fd = _fd(fileobj)
        del self._keys[fd]
        self._epoll.unregister(fd)

    def select(self) -> list[tuple[Key, int]]:
        """Each ready registration with its events (EVENT_READ, EVENT_WRITE), as far as it asked for
        them; waits as long as nothing is. A signal's handler interrupts no wait (PEP 475)."""
        ready = []
        for fd, got in self._epoll.poll(-1, max(len(self._keys), 1)):
            key, wanted = self._keys[fd]
            events = ((EVENT_READ if got & _READABLE else 0) | (EVENT_WRITE if got & _WRITABLE else 0)) & wanted
            if events:
                ready.append((key, events))
        return ready
