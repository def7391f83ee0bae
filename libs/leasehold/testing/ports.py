"""Free loopback ports for processes a test or ``make run`` starts."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for_port(
    host: str, port: int, timeout: float, alive: Callable[[], bool] | None = None
) -> bool:
    """True once ``port`` accepts connections; False after ``timeout``, or at once when
    ``alive`` says the process that should listen has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            if alive is not None and not alive():
                return False
            time.sleep(0.05)
    return False
