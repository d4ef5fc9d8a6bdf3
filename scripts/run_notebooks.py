"""Execute the notebooks in place so they are committed with fresh outputs (`make notebooks`).

Each notebook runs top to bottom in its own kernel, with `notebooks/` as the working
directory; a failing cell stops with the cell's error. The sample store is generated on first
use (see service/sample.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def run(path: Path, timeout: int = 600) -> nbformat.NotebookNode:
    book = nbformat.read(path, as_version=4)
    NotebookClient(
        book,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    ).execute()
    return book


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))
    for path in paths:
        print(f"running {path.name} ...", flush=True)
        nbformat.write(run(path), path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
