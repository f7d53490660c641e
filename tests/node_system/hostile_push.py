"""A hostile `no_password` run for test_push_hostile.py: not a stand-in for
OCX. It reads its first delivery (D13) and acts on its objective, calling
`ocx push` through its tool socket and printing each answer as
`tool push JSON`, then `done`, for the test to read in its unit's journal.

- `hold BRANCH`: commit on BRANCH, never push; print `held HASH`; wait.
- `offline BRANCH`: commit on BRANCH and push (a run without network that
  holds its password: its tool socket pushes for it, D34); print `held HASH`.
- `hostile BRANCH THREAD VICTIM STEM`: commit a good check-in on BRANCH;
  then, in its clone, move VICTIM (someone's check-in) to another branch,
  tag it, write a wiki page and store a hand-made forum post in THREAD;
  push (only the good check-in may leave). Then a check-in on trunk hidden
  between check-ins on BRANCH; push (refused whole). Then its clone
  replaced by a link to the run STEM's clone (another run's); push. Then by
  a FIFO; push.
- `bulk BRANCH MIB`: commit a file of MIB MiB of zeros on BRANCH (a thousandth of it on the wire)
  and push it with Fossil, as itself with the password its clone keeps; print `bulk HASH`.
- `stall URL PROJECT_CODE`: send by sync, as itself with the password its
  home holds, a blob of a `D` and a `Z` card, which Fossil stores and never
  crosslinks; print `stalled HASH`.
- `stall-digits URL PROJECT_CODE`: the same, but the blob is a new thread
  shaped exactly as Fossil's forum form writes one, dated in Arabic-Indic
  digits (which Python's `strptime` reads and Fossil never crosslinks).
- `phantom BRANCH MIB URL PROJECT_CODE`: commit MIB MiB of zeros on BRANCH, autosync off, and send
  the server by sync only the check-in's manifest, so Fossil keeps the file as a phantom; print
  `phantom CHECKIN FILE`. On a delivery that says `fill`, push with Fossil, which sends the file
  into the phantom's old row under a new receipt; print `filled FILE`.
"""
import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime, timezone

HOME = os.environ["HOME"]
CHECKOUT = os.path.join(HOME, "checkout")
CLONE = os.path.join(HOME, "repo.fossil")


def fossil(*args: str) -> str:
    done = subprocess.run(["fossil", *args], cwd=CHECKOUT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    print(f"fossil {' '.join(args[:3])} -> {done.returncode} {done.stderr.strip()[-200:]}", flush=True)
    return done.stdout


def commit(name: str, branch: str | None = None) -> str:
    with open(os.path.join(CHECKOUT, name), "w") as out:
        out.write(f"{name}\n")
    fossil("add", name)
    out = fossil("commit", "-m", f"{name} by the run", "--no-warnings", *(["--branch", branch] if branch else []))
    return out.split("New_Version: ")[1].split()[0]


def push() -> dict:
    done = subprocess.run([sys.executable, "-m", "ocx.cli.launch", "push", "--json"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    answer = json.loads(done.stdout)
    print("tool push " + json.dumps(answer), flush=True)
    return answer


def forum_post(root: str, text: str) -> bytes:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000")
    body = f"D {stamp}\nG {root}\nI {root}\nN text/x-markdown\nU {os.environ.get('USER', 'run')}\n"
    body += f"W {len(text.encode())}\n{text}\n"
    data = body.encode()
    return data + b"Z " + hashlib.md5(data).hexdigest().encode() + b"\n"


def hostile(branch: str, thread: str, victim: str, stem: str) -> None:
    good = commit("good.txt", branch)
    print(f"good {good}", flush=True)
    fossil("amend", victim, "--branch", "stolen")
    fossil("tag", "add", "release", victim)
    page = os.path.join(HOME, "page.md")
    with open(page, "w") as out:
        out.write("# Written by a run\n")
    fossil("wiki", "create", "hostile-page", page, "--mimetype", "text/x-markdown")
    raw = os.path.join(HOME, "post.artifact")
    data = forum_post(thread, "Posted by hand, past every tool.")
    with open(raw, "wb") as out:
        out.write(data)
    fossil("test-content-put", raw)
    print(f"post {hashlib.sha3_256(data).hexdigest()}", flush=True)
    push()
    fossil("update", "trunk")
    print(f"stray {commit('stray.txt')}", flush=True)
    fossil("update", branch)
    print(f"after {commit('after.txt')}", flush=True)
    push()
    os.rename(CLONE, CLONE + ".mine")
    os.symlink(f"/var/lib/private/ocx-runs/{stem}/repo.fossil", CLONE)
    push()
    os.unlink(CLONE)
    os.mkfifo(CLONE)
    push()
    print("done", flush=True)


def stall(url: str, project_code: str, digits: bool = False) -> None:
    from ocx.fossil.web import WebSession  # what any run may write by hand: it is the protocol's own

    stamp = datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.000')
    if digits:  # the year in Arabic-Indic digits (U+0660..U+0669): strptime's %Y takes them, Fossil does not
        stamp = stamp[:4].translate({ord("0") + n: 0x660 + n for n in range(10)}) + stamp[4:]
        text = "A post no form wrote."
        body = (f"D {stamp}\nH Hello\nN text/x-markdown\nU {os.environ['USER']}\n"
                f"W {len(text.encode())}\n{text}\n").encode()
    else:
        body = f"D {stamp}\n".encode()
    blob = body + b"Z " + hashlib.md5(body).hexdigest().encode() + b"\n"
    with open(os.path.join(HOME, ".ocx-password")) as kept:
        password = kept.read().strip()
    WebSession(url, os.environ["USER"], password).push_artifacts([(hashlib.sha3_256(blob).hexdigest(), blob)],
                                                                 project_code)
    print(f"stalled {hashlib.sha3_256(blob).hexdigest()}", flush=True)


def bulk(branch: str, mib: str) -> None:
    with open(os.path.join(CHECKOUT, "zeros.bin"), "wb") as out:
        out.truncate(int(mib) * 1024 * 1024)
    fossil("add", "zeros.bin")
    out = fossil("commit", "-m", "zeros by the run", "--no-warnings", "--branch", branch)
    fossil("push")  # whatever autosync did: the clone's own URL and kept password
    print(f"bulk {out.split('New_Version: ')[1].split()[0]}", flush=True)


def phantom(branch: str, mib: str, url: str, project_code: str) -> None:
    from ocx.fossil.web import WebSession

    fossil("settings", "autosync", "off")
    with open(os.path.join(CHECKOUT, "zeros.bin"), "wb") as out:
        out.truncate(int(mib) * 1024 * 1024)
    fossil("add", "zeros.bin")
    checkin = fossil("commit", "-m", "a file sent later", "--no-warnings", "--branch", branch).split(
        "New_Version: ")[1].split()[0]
    manifest = subprocess.run(["fossil", "artifact", checkin], cwd=CHECKOUT, capture_output=True, check=True).stdout
    (file,) = [line.split()[2] for line in manifest.decode().splitlines() if line.startswith("F zeros.bin ")]
    with open(os.path.join(HOME, ".ocx-password")) as kept:
        password = kept.read().strip()
    WebSession(url, os.environ["USER"], password).push_artifacts([(checkin, manifest)], project_code)
    print(f"phantom {checkin} {file}", flush=True)
    for line in sys.stdin:
        print("delivery " + line.strip(), flush=True)
        if "fill" in line:
            break
    fossil("push")  # the clone's own URL and kept password: the file, and the manifest again
    print(f"filled {file}", flush=True)


def main() -> None:
    first = json.loads(sys.stdin.readline())
    print("delivery " + json.dumps(first), flush=True)
    words = first.get("objective", "").split()
    if words[:1] in (["hold"], ["offline"]):
        print(f"held {commit('held.txt', words[1])}", flush=True)
        if words[0] == "offline":
            push()
    elif words[:1] == ["hostile"]:
        hostile(*words[1:5])
    elif words[:1] == ["bulk"]:
        bulk(*words[1:3])
    elif words[:1] == ["stall"]:
        stall(*words[1:3])
    elif words[:1] == ["stall-digits"]:
        stall(*words[1:3], digits=True)
    elif words[:1] == ["phantom"]:
        phantom(*words[1:5])
    for line in sys.stdin:  # until stopped
        print("delivery " + line.strip(), flush=True)


if __name__ == "__main__":
    main()
