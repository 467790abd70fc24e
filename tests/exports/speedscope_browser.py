#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# speedscope's own page (dist/release of the speedscope npm package, installed by
# scripts/install-deps.sh --test) opens memreport's speedscope export in headless chromium:
# the page loads the file from `#profileURL=` (which needs http, so a local http.server on
# a free port serves the release folder and the file), reports no script error, and its
# sandwich view lists the fixture's frame names with the profile's name in the toolbar.
# Usage: speedscope_browser.py MEMREPORT FIXTURE_TOOL WORKDIR
#        (exit 77 = skipped: no chromium or the npm package is not installed)
import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reports"))
import webdriver  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from checks import check_quietly as check, failures  # noqa: E402

RELEASE = os.path.join(HERE, "speedscope", "node_modules", "speedscope", "dist", "release")
# Put first in the page: records script errors, failed loads and alerts (speedscope alerts
# when it cannot load a profile URL) where the test can read them.
ERROR_HOOK = (b"<script>window.__errors=[];"
              b"addEventListener('error',function(e){__errors.push(String(e.message))});"
              b"addEventListener('unhandledrejection',function(e){__errors.push(String(e.reason))});"
              b"var ce=console.error;console.error=function(){__errors.push("
              b"Array.prototype.join.call(arguments,' '));ce.apply(console,arguments)};"
              b"window.alert=function(m){__errors.push('alert: '+m)};</script>")


class Handler(http.server.SimpleHTTPRequestHandler):
    """The release folder, with the error hook in index.html; /profile.json is the export."""

    def __init__(self, *args, profile=None, **kw):
        self.profile = profile
        super().__init__(*args, directory=RELEASE, **kw)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path in ("/", "/index.html"):
            body = open(os.path.join(RELEASE, "index.html"), "rb").read()
            body = body.replace(b"<head>", b"<head>" + ERROR_HOOK, 1)
            ctype = "text/html"
        elif path == "/profile.json":
            body, ctype = open(self.profile, "rb").read(), "application/json"
        else:
            return super().do_GET()
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def wait_for(b, script, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = b.js(script)
        if v:
            return v
        time.sleep(0.2)
    return None


def main():
    memreport, fixture, work = sys.argv[1:4]
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    if not os.path.exists(os.path.join(RELEASE, "index.html")):
        print("SKIP: the speedscope npm package is not installed "
              "(scripts/install-deps.sh --test runs npm ci in tests/exports/speedscope)")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap, profile = os.path.join(work, "std.db"), os.path.join(work, "std.speedscope.json")
    subprocess.run([fixture, cap], check=True)
    subprocess.run([memreport, "export", cap, "--format", "speedscope", "-o", profile],
                   check=True)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, profile=profile))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/index.html#profileURL=/profile.json&view=sandwich" % (
        server.server_address[1])
    try:
        with webdriver.Browser() as b:
            b.get(url)
            text = wait_for(b, "var t = document.body.innerText;"
                               "return t.indexOf('parse_file') >= 0 ? t : null;")
            check(text is not None, "speedscope shows the profile (sandwich view)")
            text = text or b.js("return document.body.innerText")
            for name in ("main", "load_config", "parse_file", "make_node", "cache_put",
                         "prog+0x1234", "worker"):
                check(name in text, "the page lists frame %s" % name)
            check("live bytes at the peak (7 us)" in text,
                  "the toolbar names the profile shown first")
            check(b.js("return window.__errors") == [],
                  "no script errors: %r" % b.js("return window.__errors"))
    finally:
        server.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
