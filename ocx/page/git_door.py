"""The door of /ext/git (D49): the ext program Fossil runs for a git client.

    #!/bin/sh
    exec PYTHON -I -S .../ocx/page/git_door.py /var/lib/ocx-git/NAME

Fossil decides who the caller is (its login cookie, or HTTP Basic
authorization, which `ocx node init` allows: `http_authentication_ok`) and
hands the caller's capabilities over as FOSSIL_CAPABILITIES (its own,
anonymous's and nobody's, as Fossil merges them). Fossil's read capability
(`o`) lets a caller fetch; without it, a caller who has not logged in is
asked to (401 with WWW-Authenticate, so `git clone http://LOGIN@HOST/ext/git`
works) and a login is refused (403): either learns nothing of the
repository. Only git's smart fetch is served; a push is refused with where
work goes instead (D50). Then `git http-backend` runs, exec'd, on the bare
repository the node keeps (git/mirror.py), which is root's: this account
only reads it.

Fossil 2.21 passes an ext program neither Content-Encoding nor Git-Protocol:
git sends a request body of more than 1 kB gzipped, so a body that starts
with gzip's magic is inflated here (a pkt-line starts with a hex digit,
never 0x1f), bounded. Standard library only, run as a file (page_door.py's
reasons: a door starts for every request).
"""
import os
import sys
import zlib

GIT = "/usr/bin/git"
SERVED = "repository.git"
BODY_MAX = 64 << 20  # a fetch's wants and haves: far below, for any history
PATHS = ("/info/refs", "/git-upload-pack", "/HEAD")
PUSH_REFUSED = ("this git repository is a read-only mirror of the node's Fossil repository: pushes are refused."
                " To send work back, run `ocx git import` in a Fossil clone of your own login, which turns your git"
                " commits into your check-ins, and `fossil push` them (docs/git.md)")


def pkt(line: str) -> bytes:
    data = line.encode()
    return f"{len(data) + 4:04x}".encode() + data


def refuse_push() -> int:
    """A push refused in git's own words: git prints an ERR packet as `remote error: ...`, where
    Fossil would wrap a text/plain page in its skin and git show no more than the status."""
    body = pkt("# service=git-receive-pack\n") + b"0000" + pkt(f"ERR {PUSH_REFUSED}\n")
    sys.stdout.buffer.write(b"Status: 200 OK\r\nContent-Type: application/x-git-receive-pack-advertisement\r\n"
                            b"Cache-Control: no-cache\r\n\r\n" + body)
    sys.stdout.flush()
    return 0


def answer(status: str, text: str, headers: str = "") -> int:
    sys.stdout.write(f"Status: {status}\r\nContent-Type: text/plain\r\n{headers}\r\n{text}")
    sys.stdout.flush()
    return 0


def read_body(length: int) -> bytes:
    parts: list[bytes] = []
    left = length
    while left > 0:
        part = os.read(0, min(left, 1 << 16))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def inflated(body: bytes) -> bytes | None:
    """BODY, gunzipped when gzip's; None past BODY_MAX."""
    if not body.startswith(b"\x1f\x8b"):
        return body
    unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = unzip.decompress(body, BODY_MAX + 1)
    except zlib.error:
        return None
    return None if len(out) > BODY_MAX or unzip.unconsumed_tail else out


def refusal(environ: dict[str, str]) -> tuple[str, str, str] | None:
    """Why this request is not served (status, text, headers), or None to serve it."""
    path, query = environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")
    if "receive-pack" in path or "receive-pack" in query:
        return "403 Forbidden", PUSH_REFUSED + "\n", ""
    if "o" not in environ.get("FOSSIL_CAPABILITIES", ""):
        if not environ.get("FOSSIL_USER"):
            return ("401 Unauthorized", "Log in: this repository is readable by logins with Fossil's read right.\n",
                    'WWW-Authenticate: Basic realm="OCX git"\r\n')
        return "403 Forbidden", "Your login may not read this repository's check-ins.\n", ""
    if path not in PATHS:
        return "404 Not Found", "Only git's smart HTTP fetch is served here.\n", ""
    return None


def main(argv: list[str]) -> int:
    root = argv[0]
    environ = dict(os.environ)
    refused = refusal(environ)
    if refused is not None and refused[1].startswith(PUSH_REFUSED) and environ.get("PATH_INFO") == "/info/refs":
        return refuse_push()
    if refused is not None:
        return answer(*refused)
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length < 0 or length > BODY_MAX:
        return answer("413 Payload Too Large", "The request is larger than a fetch needs.\n")
    body = inflated(read_body(length))
    if body is None:
        return answer("400 Bad Request", "The request body does not inflate within bounds.\n")
    given = os.memfd_create("ocx-git-body")
    os.write(given, body)
    os.lseek(given, 0, os.SEEK_SET)
    os.dup2(given, 0)
    os.close(given)
    env = {"GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": f"/{SERVED}{environ['PATH_INFO']}",
           "REQUEST_METHOD": environ.get("REQUEST_METHOD", "GET"), "QUERY_STRING": environ.get("QUERY_STRING", ""),
           "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""), "CONTENT_LENGTH": str(len(body)),
           "REMOTE_USER": environ.get("FOSSIL_USER", ""), "REMOTE_ADDR": environ.get("REMOTE_ADDR", ""),
           "PATH": "/usr/bin:/bin", "HOME": root, "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C.UTF-8",
           # The repository is root's and this account only reads it: git's ownership check told it is safe.
           # `*`: upload-pack checks the path `.` it runs in; this door serves no repository but SERVED.
           "GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*",
           "GIT_CONFIG_KEY_1": "http.receivepack", "GIT_CONFIG_VALUE_1": "false"}
    os.execve(GIT, [GIT, "http-backend"], env)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
