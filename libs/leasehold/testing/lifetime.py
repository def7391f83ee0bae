"""Child processes that end with the process that started them (Linux's parent-death signal).

``make run`` starts etcd and every service as a child process in a session of its own (so a
Ctrl-C reaches only the supervisor, which then stops them in order). If the supervisor itself is
killed, nothing would stop them: they would run on as orphans holding the fixed ports. With
:func:`parent_death_signal` as ``preexec_fn``, the child asks the kernel
(``prctl(PR_SET_PDEATHSIG)``) to send it SIGTERM when its parent goes, and the services stop as
on any SIGTERM.

The kernel sends the signal when the *thread* that forked the child exits, so only a process
that starts its children from its main thread, and keeps it until it stops them, should ask for
it: ``make run`` does; test code that starts processes from worker threads must not.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def parent_death_signal(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive ``sig`` when its parent dies; None where
    the kernel has no such thing (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def in_child() -> None:
        if libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), sig)

    return in_child
