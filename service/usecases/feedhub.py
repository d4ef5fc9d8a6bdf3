"""Wake-ups for the change feed: who is waiting for the store's next event.

A :class:`FeedHub` is one store listener (and one reset listener) shared by every reader of the
change feed: the ``GET /events`` streams (asyncio tasks, :class:`AsyncWaiter`) and the webhook
workers (threads, :class:`ThreadWaiter`). It carries no events, only "something was applied":
readers always read the events themselves from the log, by seq, so a slow reader is served
from the log at its own pace and nothing is ever queued, dropped or skipped.

The listener runs in the writer's thread under the store lock, so it does the least it can:
each armed waiter is woken once (an asyncio waiter through ``loop.call_soon_threadsafe``, a
thread waiter through a :class:`threading.Event`). No lock is taken here: the set of waiters is
copied (atomic under the GIL) before it is walked, and :meth:`FeedHub.close` may run from a
signal handler (``decigraph serve`` ending the streams when it is asked to stop).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from graph.events import Event
    from graph.persistence import LoggedGraph


class Waiter(Protocol):
    def wake(self) -> None: ...


class FeedHub:
    """The change feed's wake-ups for one store (see the module docstring).

    ``generation`` counts the times the store's state was rebuilt from its log (a shared log
    that diverged from this replica): a reader that sees it change stops trusting the seqs it
    has read. ``closed`` is set once, as the process stops serving.
    """

    def __init__(self, store: LoggedGraph) -> None:
        self.store = store
        self.generation = 0
        self.closed = False
        self._waiters: set[Waiter] = set()
        store.listeners.append(self._heard)
        store.reset_listeners.append(self._reset)

    @property
    def waiting(self) -> int:
        """How many readers are subscribed now."""
        return len(self._waiters)

    def add(self, waiter: Waiter) -> None:
        self._waiters.add(waiter)

    def discard(self, waiter: Waiter) -> None:
        self._waiters.discard(waiter)

    def _wake_all(self) -> None:
        for waiter in tuple(self._waiters):
            waiter.wake()

    def _heard(self, event: Event) -> None:
        """A store listener (the writer's thread, under the store lock)."""
        self._wake_all()

    def _reset(self) -> None:
        """A reset listener: the state was rebuilt; every reader must look again."""
        self.generation += 1
        self._wake_all()

    def close(self) -> None:
        """Stop serving: every reader wakes, sees ``closed`` and ends (safe from a signal
        handler: no lock is taken)."""
        self.closed = True
        self._wake_all()

    def subscribe(self) -> AsyncWaiter:
        """A waiter for the running event loop (call it from a coroutine)."""
        waiter = AsyncWaiter(self, asyncio.get_running_loop())
        self.add(waiter)
        return waiter

    def thread_waiter(self) -> ThreadWaiter:
        waiter = ThreadWaiter(self)
        self.add(waiter)
        return waiter


class AsyncWaiter:
    """An asyncio task's wait for the store to pass a seq; :meth:`close` it when done."""

    def __init__(self, hub: FeedHub, loop: asyncio.AbstractEventLoop) -> None:
        self._hub = hub
        self._loop = loop
        self._event = asyncio.Event()
        self._armed = False

    def wake(self) -> None:
        """Any thread: wake the task once per wait (later events cost nothing until it waits
        again)."""
        if self._armed:
            self._armed = False
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, seen: int, generation: int, timeout: float) -> None:
        """Return once the store has applied an event after ``seen``, its state was rebuilt
        (``generation`` changed), the hub closed, or ``timeout`` seconds passed."""
        self._event.clear()
        self._armed = True  # armed before looking: an event applied from now on wakes us
        hub = self._hub
        if hub.store.seq > seen or hub.generation != generation or hub.closed:
            self._armed = False
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)
        self._armed = False

    def close(self) -> None:
        self._hub.discard(self)


class ThreadWaiter:
    """A thread's wait for the store to pass a seq (the webhook workers)."""

    def __init__(self, hub: FeedHub) -> None:
        self._hub = hub
        self._event = threading.Event()

    def wake(self) -> None:
        self._event.set()

    def wait(self, seen: int, timeout: float) -> None:
        """Return once the store has applied an event after ``seen``, the hub closed or was
        reset, :meth:`wake` was called, or ``timeout`` seconds passed."""
        self._event.clear()
        hub = self._hub
        if hub.store.seq > seen or hub.closed:
            return
        self._event.wait(timeout)

    def close(self) -> None:
        self._hub.discard(self)
