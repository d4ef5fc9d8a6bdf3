"""The graph explorer at ``/ui``: a static page and its assets, behind the same tokens as /cstp.

A browser cannot attach a Bearer header to a page load, so ``/ui`` and its assets also accept
the token from the ``decigraph_token`` cookie, which the login form sets (``SameSite=Strict``,
``Path=/ui``). ``/cstp`` keeps accepting only the header: the page's script reads the cookie and
sends it as ``Authorization``, so another site can never make a browser call a method (no CSRF).

The login form first tries the token on ``/cstp`` (a refused one gets a message at once) and only
then keeps it, in a session cookie: it has to be a cookie, because the page load itself must
carry it (Web Storage is never sent with a request), and a session one, so that a credential
able to write to the graph does not outlive the browser session on disk (as ``localStorage``
or a persistent cookie would).

The d3 library is not in the repository: ``make ui`` installs the version pinned in
``service/ui/package-lock.json`` with ``npm ci``. Without it, the page answers 503 saying so.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from html import escape
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import FileResponse, HTMLResponse

from .auth import COOKIE, TokenTable, agent_for_request

UI_DIR = Path(__file__).resolve().parent.parent / "ui"
HTML = "text/html; charset=utf-8"
COMMON_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}
# A 401 says which scheme it wants, like /cstp's (browsers do not prompt for Bearer).
REFUSED_HEADERS = {**COMMON_HEADERS, "WWW-Authenticate": "Bearer"}
# Only our own files: no inline script or style, no other origin, no framing.
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@dataclass(frozen=True)
class Asset:
    path: str  # relative to the ui directory
    media_type: str


ASSETS = {
    "": Asset("index.html", HTML),
    # The page's scripts, in the order index.html loads them.
    **{
        name: Asset(name, "text/javascript; charset=utf-8")
        for name in (
            "core.js",
            "overview.js",
            "graph.js",
            "panel.js",
            "history.js",
            "timeline.js",
            "explorer.js",
        )
    },
    "explorer.css": Asset("explorer.css", "text/css; charset=utf-8"),
    # Installed by `make ui` from the lock file, not checked in.
    "vendor/d3.min.js": Asset("node_modules/d3/dist/d3.min.js", "text/javascript; charset=utf-8"),
}

LOGIN_STYLE = """
body{font:15px/1.5 system-ui,sans-serif;background:#f1f5f9;color:#0f172a;margin:0;
display:grid;place-items:center;min-height:100vh}
form{background:#fff;padding:28px 32px;border-radius:10px;box-shadow:0 4px 24px #0f172a1a;
width:min(420px,90vw)}
h1{font-size:20px;margin:0 0 4px}p{color:#475569;margin:0 0 16px}
input{width:100%;box-sizing:border-box;padding:9px 11px;border:1px solid #cbd5e1;
border-radius:6px;font:inherit;margin-bottom:12px}
button{background:#1e293b;color:#fff;border:0;border-radius:6px;padding:9px 16px;font:inherit;
cursor:pointer}code{background:#f1f5f9;padding:1px 4px;border-radius:4px;font-size:13px}
.error{color:#b91c1c}
"""

# The token is tried on /cstp first (a refused one is said at once, without a reload), then kept
# in a session cookie, sent back only to /ui (never to /cstp) and never on cross-site requests.
LOGIN_SCRIPT = """
var form = document.getElementById("login");
var note = document.getElementById("login-error");
function say(text) {
  note.textContent = text;
  note.hidden = !text;
  form.querySelector("button").disabled = false;
}
form.addEventListener("submit", function (event) {
  event.preventDefault();
  var token = document.getElementById("token").value.trim();
  if (!token) return;
  form.querySelector("button").disabled = true;
  fetch("/cstp", {
    method: "POST",
    headers: {"Content-Type": "application/json", "Authorization": "Bearer " + token},
    body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "cstp.getReplicaStatus", params: {}})
  }).then(function (response) {
    if (response.status === 401) {
      say("The server refused this token. Check it and paste it again.");
      return;
    }
    var secure = location.protocol === "https:" ? "; Secure" : "";
    document.cookie = "decigraph_token=" + encodeURIComponent(token) +
      "; Path=/ui; SameSite=Strict" + secure;
    location.reload();
  }, function () {
    say("The server did not answer. Try again in a moment.");
  });
});
"""


def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode()).digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


LOGIN_CSP = (
    f"default-src 'none'; script-src {_csp_hash(LOGIN_SCRIPT)}; "
    f"style-src {_csp_hash(LOGIN_STYLE)}; connect-src 'self'; base-uri 'none'; "
    "form-action 'none'; "
    "frame-ancestors 'none'"
)


def login_page(rejected: bool) -> str:
    message = "The saved token was not accepted. Paste a valid one." if rejected else ""
    hidden = "" if rejected else " hidden"
    note = f'<p id="login-error" class="error" role="alert"{hidden}>{message}</p>'
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>decigraph explorer: sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{LOGIN_STYLE}</style></head>
<body><form id="login" autocomplete="off">
<h1>decigraph explorer</h1>
<p>This server needs an API token. The first start wrote one to
<code>&lt;data-dir&gt;/auth-tokens</code> (the part after <code>agent:</code>).</p>
{note}
<label for="token">API token</label>
<input id="token" type="password" autofocus required>
<button type="submit">Open the explorer</button>
</form><script>{LOGIN_SCRIPT}</script></body></html>"""


def not_built_page(ui_dir: Path) -> str:
    where = escape(str(ui_dir))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>decigraph explorer: not built</title></head>
<body><h1>The explorer's JavaScript is not installed</h1>
<p>Run <code>make ui</code> (it runs <code>npm ci --prefix service/ui</code>) and reload.
Looked in {where}/node_modules.</p></body></html>"""


def add_ui_routes(api: FastAPI, tokens: TokenTable, ui_dir: Path = UI_DIR) -> None:
    """Serve the explorer: ``GET /ui`` (the page) and ``GET /ui/<asset>``."""

    def serve(request: Request, name: str) -> Response:
        if agent_for_request(tokens, request) is None:
            if name:
                return Response("authentication required", 401, headers=REFUSED_HEADERS)
            headers = {**REFUSED_HEADERS, "Content-Security-Policy": LOGIN_CSP}
            return HTMLResponse(login_page(COOKIE in request.cookies), 401, headers=headers)
        asset = ASSETS.get(name)
        if asset is None:
            return Response("not found", 404, headers=COMMON_HEADERS)
        if not (ui_dir / ASSETS["vendor/d3.min.js"].path).is_file():  # the page needs d3
            return HTMLResponse(not_built_page(ui_dir), 503, headers=COMMON_HEADERS)
        headers = {**COMMON_HEADERS, "Content-Security-Policy": PAGE_CSP}
        return FileResponse(ui_dir / asset.path, media_type=asset.media_type, headers=headers)

    @api.get("/ui", include_in_schema=False)
    def page(request: Request) -> Response:
        return serve(request, "")

    @api.get("/ui/{name:path}", include_in_schema=False)
    def asset(request: Request, name: str) -> Response:
        return serve(request, name)
