"""Run a command where only loopback exists: started inside `unshare --net`.

    python offline.py LOG -- PROGRAM [ARG...]

Brings the new network namespace's loopback up (if it is not: a run's unit
has it up and no capability to change it), answers HTTP on 127.0.0.1:PORT
(below) with 401 and an invalid-key error, as a service refuses a missing
credential, keeping each request (method, path, body) as a JSON line in LOG
(LOG `-`: on standard error, `offline-request JSON`, as a unit's journal
keeps it), and runs PROGRAM with this process's input and output.
The agent CLIs' services cannot be reached from these machines anyway
(the brief); here nothing but loopback can be, so nothing leaves the host.
Exits as PROGRAM did (128 + signal when a signal ended it).
"""
import errno
import fcntl
import http.server
import json
import signal
import socket
import struct
import subprocess
import sys
import threading

PORT = 18999  # free: the namespace is new
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
REFUSAL = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                "code": "invalid_api_key"}}).encode()


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        asked = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(control, SIOCGIFFLAGS, asked))[1]
        if not flags & IFF_UP:
            fcntl.ioctl(control, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def summary(method: str, path: str, body: str) -> dict:
    """The user's texts of a Responses API request, and whether OCX's tools were offered."""
    try:
        items = json.loads(body).get("input", [])
    except (ValueError, AttributeError):
        items = []
    texts = [part.get("text", "") for item in items if isinstance(item, dict) and item.get("role") == "user"
             for part in item.get("content", []) if isinstance(part, dict)]
    return {"method": method, "path": path, "mcp_ocx": "mcp__ocx" in body,
            "texts": [t for t in texts if not t.startswith("<environment_context>")]}


def refusing_server(log: str) -> http.server.HTTPServer:
    lock = threading.Lock()

    class Refuse(http.server.BaseHTTPRequestHandler):
        def refuse(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length).decode(errors="replace") if length else ""
            line = json.dumps({"method": self.command, "path": self.path, "body": body})
            if log == "-":  # a journal line stays short: what the request asked, and with which tools
                print("offline-request " + json.dumps(summary(self.command, self.path, body)), file=sys.stderr,
                      flush=True)
            else:
                with lock, open(log, "a") as out:
                    out.write(line + "\n")
            self.send_response(401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(REFUSAL)))
            self.end_headers()
            self.wfile.write(REFUSAL)

        do_GET = do_POST = refuse

        def log_message(self, *_) -> None:
            pass

    return http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Refuse)


def main(args: list[str]) -> None:
    log, program = args[0], args[2:]
    assert args[1] == "--" and program, __doc__
    # A stop signals the whole group, as systemd does a unit: PROGRAM's end is the answer.
    signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        loopback_up()
        server = refusing_server(log)
    except OSError as error:  # a unit without network allows no IP socket at all (RestrictAddressFamilies)
        if error.errno != errno.EAFNOSUPPORT:
            raise
        print(f"offline: no IP socket here ({error.strerror}): no stand-in service", file=sys.stderr, flush=True)
    else:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    status = subprocess.run(program).returncode
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main(sys.argv[1:])
