"""``DECIGRAPH_TORCH_THREADS``: the server's model runs on the threads the setting says.

torch's default (one intra-op thread per core) made the p95 of ``remember`` ten times its
median on a busy host (README "Performance", ``bench/bench_tails.py``); the served process
applies the setting when the model loads. Each check runs in a fresh interpreter, since torch's
thread count is process-wide and fixed once torch has done parallel work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]

# What `decigraph serve` does: open_app, then Warmup loads and runs the model. The request
# threads are others than the warm-up's, so the count is read from a fresh thread too.
SERVED = """
import json, sys, threading
from service.composition import Warmup, open_app
from service.settings import Settings
app = open_app(Settings(data_dir=sys.argv[1]))
warmup = Warmup(app)
warmup.run()
import torch
seen = {}
def request():
    app.index.embed(["a request thread"])
    seen["request"] = torch.get_num_threads()
thread = threading.Thread(target=request)
thread.start()
thread.join()
print(json.dumps({
    "state": warmup.state,
    "setting": app.index.embedder.threads,
    "warmup": torch.get_num_threads(),
    "interop": torch.get_num_interop_threads(),
    **seen,
}))
app.close()
"""

DEFAULT = "import torch; print(torch.get_num_threads())"


def clean_env() -> dict[str, str]:
    """This environment without thread settings: a model loaded earlier in this test process
    set ``OMP_NUM_THREADS`` here (the embedder does, when it is unset), and children inherit it."""
    unset = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
    clean = {k: v for k, v in os.environ.items() if k not in unset}
    return {k: v for k, v in clean.items() if not k.startswith("DECIGRAPH_")}


def served(data: Path, env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", SERVED, str(data)],
        cwd=ROOT,
        env={**clean_env(), **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_the_setting_defaults_to_one_thread_and_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DECIGRAPH_TORCH_THREADS", raising=False)
    assert Settings().torch_threads == 1
    monkeypatch.setenv("DECIGRAPH_TORCH_THREADS", "0")
    assert Settings().torch_threads == 0
    monkeypatch.setenv("DECIGRAPH_TORCH_THREADS", "-1")
    with pytest.raises(ValueError, match="torch_threads"):
        Settings()


def test_the_served_model_runs_on_one_thread_by_default(tmp_path: Path) -> None:
    seen = served(tmp_path / "data", {})
    assert seen == {
        "state": "warm",
        "setting": 1,
        "warmup": 1,
        "interop": 1,
        "request": 1,
    }


def test_zero_keeps_torchs_default(tmp_path: Path) -> None:
    default = subprocess.run(
        [sys.executable, "-c", DEFAULT], env=clean_env(), capture_output=True, text=True, check=True
    )
    seen = served(tmp_path / "data", {"DECIGRAPH_TORCH_THREADS": "0"})
    assert seen["setting"] == 0
    assert seen["request"] == seen["warmup"] == int(default.stdout.strip())
