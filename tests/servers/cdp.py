"""A small Chrome DevTools Protocol client: headless Debian `chromium` driven over its
websocket, enough to load a page, type, click, read the DOM and take a screenshot.

Playwright and Puppeteer download browser builds of their own, which cannot be fetched
here; the system's chromium with `--remote-debugging-port` needs nothing but `websockets`.
"""

import base64
import itertools
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

CHROMIUM_NAMES = ("chromium", "chromium-browser")


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


class Browser:
    """One headless chromium with one page; use as a context manager (the process always stops)."""

    def __init__(self, exe: str, profile: Path, width: int = 1280, height: int = 860) -> None:
        self.profile = profile
        self.log = (profile.parent / "chromium.log").open("w")
        # --no-sandbox: chromium refuses to start as root otherwise (CI runs as root here).
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={profile}", f"--window-size={width},{height}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=self.log)
        self._ids = itertools.count(1)
        self.ws = connect(self._page_socket(), max_size=None, open_timeout=30)

    def _page_socket(self, timeout_s: float = 60.0) -> str:
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}; see {self.log.name}")
            if marker.is_file() and marker.read_text().strip():
                port = int(marker.read_text().split()[0])
                pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
                         if t["type"] == "page"]
                if pages:
                    return str(pages[0]["webSocketDebuggerUrl"])
            time.sleep(0.2)
        raise RuntimeError("chromium did not open its DevTools port in time")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """One CDP command's result (events that arrive meanwhile are dropped)."""
        ident = next(self._ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result") or {})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 60.0) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        body = self.evaluate("document.body ? document.body.innerText.slice(0, 2000) : ''")
        raise AssertionError(f"timed out waiting for {expression!r}; the page shows: {body}")

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def type_text(self, text: str) -> None:
        self.send("Input.insertText", text=text)

    def press_enter(self) -> None:
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13,
                      text="\r" if kind == "keyDown" else "")

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"]))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
            self.log.close()

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
