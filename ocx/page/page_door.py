"""The node's web page's door: the ext program Fossil runs for /ext/ocx (D30).

    #!/bin/sh
    exec PYTHON -I -S .../ocx/page/page_door.py /etc/ocx/NAME.json /run/ocx/NAME/page.sock

Fossil starts an ext program for every request, and a Python program that
imports the page costs most of the page's time in its start alone
(docs/console.md, 'Fast'). This script starts in a few milliseconds: standard library only, run
as a file with `-I -S` (no site, no environment, no package imported). It
hands the request as Fossil gave it (its environment, working directory and
body) to the node's page service (ocx-page@NAME, page_service.py), which has
imported the page once and runs it per request in a process of its own, and
writes back what the page answered, unchanged.

If the service cannot be reached, or does not take the request in time, the
door runs the page itself, as every request did before (`python -m
ocx.page.web CONFIG`, exec'd with the same environment and body), so the
page never goes dark. A request the service took and then failed to answer
is run again in the door only if it is a GET, which changes nothing; a POST
may have run its tool, so its answer says so instead of running it twice.

The exchange on the socket (the socket is 0600, the Fossil server's own,
units/ocx-page@.socket): the door sends three length-prefixed blocks (the
environment as NUL-separated KEY=VALUE, the working directory, the body);
the service says R once it holds the whole request; the door says G, and
only then does the service run it (a request the door gave up on before R
is never run); the service answers a status byte (0 ran, 1 the page
failed) and the page's output, and closes.
"""
import _socket  # the C module alone: `socket` costs the door tens of milliseconds to import (enum, selectors)
import os
import sys

READY_SECONDS = 20.0  # the service's start on a busy machine, while systemd starts it for this request
ANSWER_SECONDS = 560.0  # the service's own bound on a request is 540 s, Fossil's 600 s
BODY_MAX = 8 << 20  # a larger body goes to the in-process page, as before
GATEWAY_FAILED = (b"Status: 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
                  b"The node's page service took this POST and gave no answer: whether it changed anything "
                  b"is not known. Look at what it would have changed before sending it again.\n")


def block(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def request(environ: dict[bytes, bytes], cwd: bytes, body: bytes) -> bytes:
    env = b"\0".join(key + b"=" + value for key, value in environ.items())
    return block(env) + block(cwd) + block(body)


def read_body(length: int) -> bytes:
    """Exactly LENGTH bytes of stdin (Fossil keeps the pipe open while it waits for the answer)."""
    parts: list[bytes] = []
    left = length
    while left > 0:
        part = os.read(0, min(left, 1 << 16))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def in_process(config: str, body: bytes | None) -> None:  # never returns: exec
    """Run the page here, as Fossil ran it before the service (web.py); BODY, when
    already read from stdin, is given to it again as its stdin."""
    if body is not None:
        given = os.memfd_create("ocx-page-body")
        os.write(given, body)
        os.lseek(given, 0, os.SEEK_SET)
        os.dup2(given, 0)
        os.close(given)
    python = sys.executable
    os.execv(python, [python, "-m", "ocx.page.web", config])


def receive(connection: _socket.socket) -> bytes:
    parts: list[bytes] = []
    while True:
        part = connection.recv(1 << 16)
        if not part:
            return b"".join(parts)
        parts.append(part)


def write_out(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def main(argv: list[str]) -> int:
    config, socket_path = argv[0], argv[1]
    try:
        length = int(os.environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > BODY_MAX or length < 0:
        in_process(config, None)
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    connection.settimeout(READY_SECONDS)
    try:
        connection.connect(socket_path)
    except OSError:  # no service here (stopped, not installed): the page as before
        connection.close()
        in_process(config, None)
    body = read_body(length)
    try:
        connection.sendall(request(dict(os.environb), os.getcwdb(), body))
        taken = connection.recv(1) == b"R"
        if taken:
            connection.sendall(b"G")
    except OSError:
        taken = False
    if not taken:  # never run by the service: run it here
        connection.close()
        in_process(config, body)
    connection.settimeout(ANSWER_SECONDS)
    try:
        answer = receive(connection)
    except OSError:
        answer = b""
    connection.close()
    if answer[:1] not in (b"0", b"1"):  # taken, then no answer: the service or its process died
        if os.environ.get("REQUEST_METHOD", "GET") in ("GET", "HEAD"):
            in_process(config, body)
        write_out(GATEWAY_FAILED)
        return 1
    write_out(answer[1:])
    return 0 if answer[:1] == b"0" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
