"""A writer process for crash tests: writes concurrently, prints each acknowledged write.

Run as ``python -m tests.support.crash_writer DATA_DIR THREADS``. Each line on stdout is
``ack <op> <id>`` printed only after the store returned, i.e. after the event was fsync-ed.
"""

from __future__ import annotations

import sys
import threading

from graph.drafts import DecisionDraft
from graph.errors import DecigraphError
from graph.store import DecisionStore, StoreOptions

_print_lock = threading.Lock()


def _ack(line: str) -> None:
    with _print_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _work(store: DecisionStore, worker: int) -> None:
    previous: str | None = None
    index = 0
    while True:
        index += 1
        node = store.record(
            DecisionDraft(text=f"worker {worker} decision {index}", tags=[f"w{worker}"]),
            f"agent-{worker}",
        )
        _ack(f"ack record {node.id}")
        if previous is not None:
            try:
                store.link(node.id, previous, "depends_on", f"agent-{worker}")
                _ack(f"ack link {node.id}>{previous}")
            except DecigraphError:
                pass
        previous = node.id


def main() -> None:
    data_dir, threads = sys.argv[1], int(sys.argv[2])
    store = DecisionStore.open(data_dir, StoreOptions(fsync="always", snapshot_every=50))
    _ack("ready")
    workers = [threading.Thread(target=_work, args=(store, n), daemon=True) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


if __name__ == "__main__":
    main()
