"""``decigraph serve`` start-up over a real socket: a recall sent the moment the server accepts
is answered (it waits for the model, never fails), ``/ready`` says 503 until the model is warm,
and the server prints its start-up timeline (with ``DECIGRAPH_MODEL_BOOT=process``, the model
answering from a helper process first, then loaded in the server)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from graph.drafts import DecisionDraft
from graph.store import DecisionStore, StoreOptions
from tests.e2e.test_serve import free_port, stop_serve

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "startup-e2e-token-0123456789abcdef"


@pytest.mark.parametrize("boot", ["thread", "process"])
def test_the_first_request_waits_for_the_model(tmp_path: Path, boot: str) -> None:
    data = tmp_path / "data"
    with DecisionStore.open(data, StoreOptions(fsync="never")) as store:
        store.record(DecisionDraft(text="Use PostgreSQL for the billing ledger"), "setup")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DECIGRAPH_")}
    env["CSTP_AUTH_TOKENS"] = f"ops:{TOKEN}"
    env["DECIGRAPH_MODEL_BOOT"] = boot
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "service.cli", "serve", "--data-dir", str(data)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, "--port", str(port)], cwd=ROOT, env=env, stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{port}"
    client = httpx.Client(timeout=300, headers={"Authorization": f"Bearer {TOKEN}"})
    body = {"jsonrpc": "2.0", "id": 1, "method": "cstp.recall", "params": {"query": "database"}}
    try:
        statuses: list[tuple[int, str]] = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-2000:]
            try:
                ready = client.get(f"{url}/ready")
            except httpx.TransportError:
                time.sleep(0.05)
                continue
            statuses.append((ready.status_code, ready.json()["model"]))
            break
        answer = client.post(f"{url}/cstp", json=body).json()  # at once: waits for the model
        assert "result" in answer, answer
        assert "PostgreSQL for the billing ledger" in str(answer["result"]), answer
        while time.monotonic() < deadline:
            ready = client.get(f"{url}/ready")
            statuses.append((ready.status_code, ready.json()["model"]))
            if ready.status_code == 200:
                break
            time.sleep(0.05)
        assert statuses[-1] == (200, "warm")
        assert all(code == 503 for code, model in statuses if model != "warm")  # truthful
        while "start-up:" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        line = next(x for x in log.read_text().splitlines() if "start-up:" in x)
        for stage in ("imports", "store", "indexes", "serving", "model warm"):
            assert f"{stage} " in line
        assert ("model loaded in process" in line) == (boot == "process")
    finally:
        client.close()
        stop_serve(proc)
