"""The log's lock and offline rule as one decorator.

Every public call of a ``Log`` is serialised by its lock, refused once the log is offline, and
turns an OSError into KafkaStorageError after marking the log offline: its in-memory state can
no longer be trusted to match the disk.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from services.broker_agent.log.errors import KafkaStorageError


class Guarded(Protocol):
    directory: Path
    _lock: threading.RLock
    _offline: str | None


P = ParamSpec("P")
R = TypeVar("R")
G = TypeVar("G", bound=Guarded)


def guarded(method: Callable[Concatenate[G, P], R]) -> Callable[Concatenate[G, P], R]:
    """Serialise the call and turn I/O failures into KafkaStorageError (log goes offline)."""

    @functools.wraps(method)
    def wrapper(self: G, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            if self._offline is not None:
                raise KafkaStorageError(f"log {self.directory} is offline: {self._offline}")
            try:
                return method(self, *args, **kwargs)
            except OSError as exc:
                self._offline = str(exc)
                raise KafkaStorageError(f"I/O error in log {self.directory}: {exc}") from exc

    return wrapper
