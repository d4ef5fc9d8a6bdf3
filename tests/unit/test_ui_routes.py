"""The /ui routes' auth and failure modes, without a browser (the page itself: test_ui_browser)."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from service.http.auth import TokenTable
from service.http.ui import COOKIE, UI_DIR, add_ui_routes

TOKEN = "ui-token-0123456789abcdef"
ODD_TOKEN = "odd;token=with space,0123"  # survives the cookie only if percent-encoded
D3 = UI_DIR / "node_modules" / "d3" / "dist" / "d3.min.js"
needs_d3 = pytest.mark.skipif(not D3.is_file(), reason="d3 not installed: run `make ui`")


def client(tokens: TokenTable, ui_dir: Path = UI_DIR) -> TestClient:
    api = FastAPI()
    add_ui_routes(api, tokens, ui_dir)
    return TestClient(api)


@pytest.fixture
def secured() -> TestClient:
    return client(TokenTable({TOKEN: "agent-a", ODD_TOKEN: "agent-b"}))


@pytest.mark.parametrize("path", ["/ui", "/ui/"])
def test_no_token_gets_the_login_form(secured: TestClient, path: str) -> None:
    response = secured.get(path)
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("text/html")
    assert '<form id="login"' in response.text
    assert "not accepted" not in response.text
    assert "explorer.js" not in response.text  # nothing of the page leaks


def test_login_form_script_and_style_are_allowed_by_its_csp(secured: TestClient) -> None:
    response = secured.get("/ui")
    csp = response.headers["content-security-policy"]
    for tag in ("script", "style"):
        (body,) = re.findall(rf"<{tag}>(.*?)</{tag}>", response.text, re.S)
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp


def test_wrong_cookie_is_refused_with_a_message(secured: TestClient) -> None:
    secured.cookies.set(COOKIE, "not-the-token-000000")
    response = secured.get("/ui")
    assert response.status_code == 401
    assert "not accepted" in response.text


def test_wrong_bearer_is_refused(secured: TestClient) -> None:
    response = secured.get("/ui", headers={"Authorization": "Bearer nope-nope-nope-nope"})
    assert response.status_code == 401


@needs_d3
def test_bearer_header_opens_the_page(secured: TestClient) -> None:
    response = secured.get("/ui", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert '<svg id="graph"' in response.text
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"


@needs_d3
@pytest.mark.parametrize("token", [TOKEN, ODD_TOKEN])
def test_cookie_opens_the_page_and_its_assets(secured: TestClient, token: str) -> None:
    secured.cookies.set(COOKIE, quote(token, safe=""))  # as the login form's JS writes it
    assert secured.get("/ui").status_code == 200
    script = secured.get("/ui/explorer.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert secured.get("/ui/explorer.css").headers["content-type"].startswith("text/css")
    d3 = secured.get("/ui/vendor/d3.min.js")
    assert d3.status_code == 200
    assert d3.content == D3.read_bytes()


@pytest.mark.parametrize("path", ["/ui/explorer.js", "/ui/vendor/d3.min.js", "/ui/nope"])
def test_assets_need_the_token_too(secured: TestClient, path: str) -> None:
    assert secured.get(path).status_code == 401


@needs_d3
@pytest.mark.parametrize(
    "path",
    ["/ui/nope.js", "/ui/package.json", "/ui/node_modules/d3/package.json", "/ui/..%2fapp.py"],
)
def test_only_listed_assets_are_served(secured: TestClient, path: str) -> None:
    response = secured.get(path, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 404


@needs_d3
def test_no_auth_opens_everything() -> None:
    open_client = client(TokenTable({}, enabled=False))
    assert open_client.get("/ui").status_code == 200
    assert open_client.get("/ui/vendor/d3.min.js").status_code == 200


def test_missing_node_modules_answers_503_saying_make_ui(tmp_path: Path) -> None:
    ui = tmp_path / "ui"
    ui.mkdir()
    for name in ("index.html", "explorer.js", "explorer.css"):
        shutil.copy(UI_DIR / name, ui / name)
    unbuilt = client(TokenTable({TOKEN: "agent-a"}), ui)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/ui", "/ui/vendor/d3.min.js"):
        response = unbuilt.get(path, headers=auth)
        assert response.status_code == 503
        assert "make ui" in response.text
    assert unbuilt.get("/ui").status_code == 401  # still no hint without a token
