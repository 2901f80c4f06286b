"""Load a report in a real headless Chromium and say what a reader's browser would see.

    python tests/browser.py reports/<run_id>/index.html --screenshot page.png

Drives the browser over the DevTools protocol on a pipe (``--remote-debugging-pipe``: fd 3
in, fd 4 out, NUL-separated JSON), so it needs no Python package and no network: Debian's
``chromium`` is enough. It collects console errors, uncaught exceptions, failed loads and any
request that is not ``file:`` or ``data:``; checks that every image decoded; measures the
page's width against the window's; and writes a full-page PNG screenshot.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
              "chrome", "headless_shell")


class BrowserUnavailable(Exception):
    """No Chromium can be started here; the message says why."""


def find_chromium() -> str:
    """Path of a Chromium-family browser: $JITBENCH_CHROMIUM, else the first on PATH."""
    env = os.environ.get("JITBENCH_CHROMIUM")
    if env:
        if shutil.which(env):
            return shutil.which(env)
        raise BrowserUnavailable(f"JITBENCH_CHROMIUM={env!r} is not an executable")
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    raise BrowserUnavailable("no Chromium found on PATH (tried " + ", ".join(CANDIDATES)
                             + "); install Debian's `chromium` package or set "
                               "JITBENCH_CHROMIUM")


@dataclasses.dataclass
class PageCheck:
    url: str
    width: int
    console_errors: list[str]
    failed_requests: list[str]
    network_requests: list[str]  # anything that is not file: or data:
    images: int
    broken_images: list[str]
    scroll_width: int
    inner_width: int
    wide_blocks: int  # .scroll blocks (tables) wider than the page: they scroll sideways
    page_height: int
    title: str
    screenshot: str | None

    @property
    def overflows(self) -> bool:
        """The page itself is wider than the window (a horizontal scrollbar on the body)."""
        return self.scroll_width > self.inner_width + 1

    @property
    def ok(self) -> bool:
        return not (self.console_errors or self.failed_requests or self.network_requests
                    or self.broken_images)


class _Pipe:
    """A DevTools session over the browser's fd 3 / fd 4 pipe."""

    def __init__(self, proc: subprocess.Popen, to_browser: int, from_browser: int):
        self.proc = proc
        self._out = os.fdopen(to_browser, "wb", buffering=0)
        self._in = os.fdopen(from_browser, "rb", buffering=0)
        self._next = 0
        self._replies: dict[int, dict] = {}
        self.events: queue.Queue[dict] = queue.Queue()
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = self._in.read(1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cond:
                        self._replies[msg["id"]] = msg
                        self._cond.notify_all()
                else:
                    self.events.put(msg)
        with self._cond:
            self._cond.notify_all()

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30.0) -> dict:
        self._next += 1
        mid = self._next
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._out.write(json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise BrowserUnavailable(f"Chromium did not answer {method} "
                                             f"(exit code {self.proc.poll()})")
                self._cond.wait(min(left, 0.5))
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})


def _launch(binary: str, profile: str) -> tuple[subprocess.Popen, _Pipe]:
    import fcntl

    to_r, to_w = os.pipe()      # we write commands, the browser reads them on fd 3
    from_r, from_w = os.pipe()  # the browser writes replies on fd 4
    # The browser's ends must become its fds 3 and 4. A tiny Python trampoline renumbers them
    # and execs the browser (no preexec_fn, which is unsafe with threads; dash cannot name fds
    # above 9); the ends are moved to fds >= 10 first so neither is 3 or 4 itself.
    r = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10)
    w = fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(to_r)
    os.close(from_w)
    flags = ["--headless=new", "--remote-debugging-pipe", "--no-first-run",
            "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
            "--disable-background-networking", "--disable-sync", "--mute-audio",
            "--hide-scrollbars", f"--user-data-dir={profile}", "about:blank"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.insert(0, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    trampoline = ("import os, sys; r, w = int(sys.argv[1]), int(sys.argv[2]); "
                  "os.dup2(r, 3); os.dup2(w, 4); os.close(r); os.close(w); "
                  "os.execv(sys.argv[3], sys.argv[3:])")
    try:
        proc = subprocess.Popen([sys.executable, "-c", trampoline, str(r), str(w), binary,
                                 *flags],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, pass_fds=(r, w))
    except OSError as exc:
        raise BrowserUnavailable(f"cannot start {binary}: {exc}") from exc
    finally:
        os.close(r)
        os.close(w)
    return proc, _Pipe(proc, to_w, from_r)


_PAGE_FACTS = """JSON.stringify({
  images: Array.from(document.images).map(i => ({
      src: i.currentSrc.slice(0, 60), ok: i.complete && i.naturalWidth > 0})),
  scrollWidth: document.documentElement.scrollWidth,
  wideBlocks: Array.from(document.querySelectorAll(".scroll"))
      .filter(d => d.scrollWidth > d.clientWidth + 1).length,
  innerWidth: window.innerWidth,
  height: Math.max(document.documentElement.scrollHeight, document.body.scrollHeight),
  title: document.title })"""


def check_page(path: Path | str, *, width: int = 1280, height: int = 900,
               screenshot: Path | str | None = None, timeout: float = 60.0,
               binary: str | None = None) -> PageCheck:
    """Open ``path`` from file:// in headless Chromium at ``width`` CSS px; see PageCheck."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(path)
    url = path.as_uri()
    binary = binary or find_chromium()
    profile = tempfile.mkdtemp(prefix="jitbench-chromium-")
    proc = None
    try:
        proc, cdp = _launch(binary, profile)
        target = cdp.call("Target.createTarget", {"url": "about:blank"}, timeout=timeout)
        session = cdp.call("Target.attachToTarget",
                           {"targetId": target["targetId"], "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            cdp.call(f"{domain}.enable", session=session)
        cdp.call("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                 session=session)
        cdp.call("Page.navigate", {"url": url}, session=session)
        errors, failed, network = [], [], []
        loaded = False
        deadline = time.monotonic() + timeout

        def drain(until_loaded: bool) -> None:
            nonlocal loaded
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrowserUnavailable(f"{url} did not finish loading in {timeout:g} s")
                try:
                    ev = cdp.events.get(timeout=min(left, 0.2) if until_loaded else 0.05)
                except queue.Empty:
                    if until_loaded and not loaded:
                        continue
                    return
                method, p = ev.get("method"), ev.get("params", {})
                if method == "Page.loadEventFired":
                    loaded = True
                elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error",
                                                                                 "assert"):
                    errors.append("console." + p["type"] + ": " + " ".join(
                        str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
                elif method == "Runtime.exceptionThrown":
                    d = p.get("exceptionDetails", {})
                    errors.append("exception: " + str(d.get("exception", {}).get(
                        "description") or d.get("text")))
                elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                    e = p["entry"]
                    errors.append(f"{e.get('source')}: {e.get('text')} {e.get('url', '')}".strip())
                elif method == "Network.loadingFailed":
                    failed.append(f"{p.get('errorText')} ({p.get('type')})")
                elif method == "Network.requestWillBeSent":
                    u = p.get("request", {}).get("url", "")
                    if not u.startswith(("file:", "data:", "about:")):
                        network.append(u)

        drain(until_loaded=True)
        time.sleep(0.3)  # late console messages
        drain(until_loaded=False)
        facts = json.loads(cdp.call("Runtime.evaluate", {"expression": _PAGE_FACTS,
                                                         "returnByValue": True},
                                    session=session)["result"]["value"])
        shot = None
        if screenshot:
            full = int(facts["height"])
            cdp.call("Emulation.setDeviceMetricsOverride",
                     {"width": width, "height": min(full, 16000), "deviceScaleFactor": 1,
                      "mobile": False}, session=session)
            data = cdp.call("Page.captureScreenshot", {"format": "png",
                                                       "captureBeyondViewport": True},
                            session=session, timeout=timeout)["data"]
            Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
            Path(screenshot).write_bytes(base64.b64decode(data))
            shot = str(screenshot)
        drain(until_loaded=False)
        try:
            cdp.call("Browser.close", timeout=5)
        except (BrowserUnavailable, RuntimeError):
            pass  # it is being killed below anyway
        return PageCheck(url=url, width=width, console_errors=errors, failed_requests=failed,
                         network_requests=network, images=len(facts["images"]),
                         broken_images=[i["src"] for i in facts["images"] if not i["ok"]],
                         scroll_width=int(facts["scrollWidth"]),
                         wide_blocks=int(facts["wideBlocks"]),
                         inner_width=int(facts["innerWidth"]),
                         page_height=int(facts["height"]), title=facts["title"],
                         screenshot=shot)
    finally:
        if proc is not None:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python tests/browser.py",
                                description="check a report page in headless Chromium")
    p.add_argument("page")
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--screenshot", metavar="PNG")
    args = p.parse_args(argv)
    try:
        c = check_page(args.page, width=args.width, screenshot=args.screenshot)
    except BrowserUnavailable as exc:
        print(f"browser unavailable: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(dataclasses.asdict(c) | {"overflows": c.overflows, "ok": c.ok}, indent=2))
    return 0 if c.ok and not c.overflows else 1


if __name__ == "__main__":
    sys.exit(main())
