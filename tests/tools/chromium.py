"""Debian's chromium, headless, driven over its DevTools pipe (fd 3 in, fd 4
out, NUL-separated JSON): no websocket library, no driver to install."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path


def binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    def __init__(self, profile: Path):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child: fd 3 reads commands, fd 4 writes answers
            moved = os.dup(from_chrome_w)  # out of the way, should it be fd 3
            os.dup2(to_chrome_r, 3)
            os.dup2(moved, 4)
            os.set_inheritable(3, True)  # dup2 onto itself keeps close-on-exec
            os.set_inheritable(4, True)

        self.process = subprocess.Popen(
            [binary(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=wire, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=self.session)

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_chrome, 65536)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next += 1
        call = {"id": self._next, "method": method, "params": params or {}}
        if session:
            call["sessionId"] = session
        os.write(self._to_chrome, json.dumps(call).encode() + b"\0")
        while True:
            message = self._read()
            if message.get("id") == self._next:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def _wait_load(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e.get("method") == "Page.loadEventFired" for e in self.events):
                self.events.clear()
                return
            self.events.append(self._read())
        raise TimeoutError("page did not load")

    def goto(self, url: str) -> None:
        self.events.clear()
        self.send("Page.navigate", {"url": url}, self.session)
        self._wait_load()

    def js(self, expression: str):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, self.session)
        return result.get("result", {}).get("value")

    def submit(self, expression: str) -> None:
        """Run EXPRESSION, which submits a form, and wait for the next page."""
        self.events.clear()
        self.js(expression)
        self._wait_load()

    def width(self, pixels: int, height: int = 900) -> None:
        """Lay pages out PIXELS wide, as a phone (under 600) or a desktop window."""
        self.send("Emulation.setDeviceMetricsOverride", {"width": pixels, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": pixels < 600}, self.session)

    def screenshot(self, path, selector: str | None = None, margin: int = 8) -> tuple[int, int]:
        """A PNG of the element SELECTOR (the whole page without one) into PATH; its (width, height)."""
        import base64

        box = self.js("(() => {const e = %s; const r = e.getBoundingClientRect();"
                      " return [r.left + scrollX, r.top + scrollY, r.width, r.height];})()"
                      % (f"document.querySelector({json.dumps(selector)})" if selector else "document.documentElement"))
        left, top = max(0, box[0] - margin), max(0, box[1] - margin)
        clip = {"x": left, "y": top, "width": box[2] + 2 * margin, "height": min(box[3] + 2 * margin, 8000), "scale": 1}
        shot = self.send("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True},
                         self.session)
        Path(path).write_bytes(base64.b64decode(shot["data"]))
        return int(clip["width"]), int(clip["height"])

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
