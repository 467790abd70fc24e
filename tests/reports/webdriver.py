# SPDX-License-Identifier: MIT
# A minimal W3C WebDriver client over urllib (python3 stdlib only): says whether it can run
# here (missing(), a test's reason to skip), starts chromedriver, opens a headless chromium
# session, and offers the few commands the page tests need (and DevTools commands through
# chromedriver), plus a PNG decoder for screenshot checks. Test-only code.
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import checks  # noqa: E402

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(Exception):
    pass


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _chromium_binary():
    # Debian's /usr/bin/chromium is a wrapper script; chromedriver wants the real binary.
    for p in ("/usr/lib/chromium/chromium", "/usr/bin/chromium"):
        if os.access(p, os.X_OK):
            return p
    raise WebDriverError("chromium not found")


CHROMEDRIVER = "/usr/bin/chromedriver"


def missing():
    """Why no browser can be started here (a driver's `SKIP:` line), or None."""
    try:
        _chromium_binary()
    except WebDriverError:
        return "chromium not installed"
    if not os.access(CHROMEDRIVER, os.X_OK):
        return "chromedriver not installed"
    return None


class Browser:
    def __init__(self, width=1280, height=800, driver=CHROMEDRIVER):
        self.port = _free_port()
        self.profile = tempfile.mkdtemp(prefix="mt-chromium-")
        self.proc = subprocess.Popen([driver, "--port=%d" % self.port],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = "http://127.0.0.1:%d" % self.port
        self.session = None
        deadline = time.time() + 30
        while True:
            try:
                if self._call("GET", "/status").get("ready"):
                    break
            except (urllib.error.URLError, ConnectionError, WebDriverError):
                pass
            if time.time() > deadline:
                self.close()
                raise WebDriverError("chromedriver did not start")
            time.sleep(0.1)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (width, height)]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": _chromium_binary(), "args": args}}}}
        try:
            self.session = self._call("POST", "/session", caps)["sessionId"]
        except Exception:
            self.close()
            raise

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                reply = json.loads(r.read().decode() or "{}")
        except urllib.error.HTTPError as e:
            try:
                reply = json.loads(e.read().decode())
            except ValueError:
                raise WebDriverError("%s %s: HTTP %d" % (method, path, e.code))
            v = reply.get("value", {})
            raise WebDriverError("%s %s: %s: %s" % (method, path, v.get("error"),
                                                    v.get("message", "")[:500]))
        v = reply.get("value")
        if path == "/session" and "sessionId" not in (v or {}):
            raise WebDriverError("no session: %r" % reply)
        return v if v is not None else {}

    def _s(self, method, path, body=None):
        return self._call(method, "/session/%s%s" % (self.session, path), body)

    def get(self, url):
        self._s("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self._s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def until(self, script, *args):
        """Whether script returns true within 30 s of asking again, a page reloading (a
        script error while it is replaced) meanwhile."""
        for _ in range(300):
            try:
                if self.js(script, *args):
                    return True
            except WebDriverError:
                pass
            time.sleep(0.1)
        return False

    def find(self, css):
        return self._s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, element):
        self._s("POST", "/element/%s/click" % element, {})

    def type(self, element, text):
        self._s("POST", "/element/%s/value" % element, {"text": text})

    def hover(self, element):
        self._s("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "duration": 0,
                         "origin": {ELEMENT: element}, "x": 0, "y": 0}]}]})

    def mouse(self, steps):
        """A pointer's steps in viewport pixels: ("move", x, y), ("down",), ("up",)."""
        acts = []
        for st in steps:
            if st[0] == "move":
                acts.append({"type": "pointerMove", "duration": 0, "origin": "viewport",
                             "x": int(st[1]), "y": int(st[2])})
            else:
                acts.append({"type": "pointer" + st[0].capitalize(), "button": 0})
        self._s("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": acts}]})
        self._s("DELETE", "/actions")

    def keys(self, text):
        """Key presses sent to the focused element (WebDriver key codes, e.g. \ue014)."""
        acts = []
        for ch in text:
            acts += [{"type": "keyDown", "value": ch}, {"type": "keyUp", "value": ch}]
        self._s("POST", "/actions", {"actions": [{"type": "key", "id": "kbd", "actions": acts}]})

    def cdp(self, cmd, params=None):
        """A Chrome DevTools Protocol command, through chromedriver (e.g. Emulation.*)."""
        return self._s("POST", "/goog/cdp/execute", {"cmd": cmd, "params": params or {}})

    def screenshot(self):
        return base64.b64decode(self._s("GET", "/screenshot"))

    def close(self):
        if self.session:
            try:
                self._call("DELETE", "/session/" + self.session)
            except Exception:
                pass
            self.session = None
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def decode_png(png):
    """Returns (width, height, rows) with rows a list of bytes objects of RGBA pixels."""
    img = checks.png_decode(png)
    if img is None or img[2] is None:
        raise ValueError("not an 8-bit RGB or RGBA PNG")
    width, height, rows = img
    if len(rows[0]) == 3 * width:
        rows = [b"".join(r[i:i + 3] + b"\xff" for i in range(0, len(r), 3)) for r in rows]
    return width, height, rows
