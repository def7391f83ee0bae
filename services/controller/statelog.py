"""The structured state-change log: one JSON line per transition (``leasehold.statechange``).

Lines go to the ``--state-change-log`` file (appended, flushed per batch so a crash loses at most
the batch being written) and to the ``state.change`` logger. Controller lifecycle records
(elected with its epoch, failover done with its duration, resigned) go through the same writer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import TextIO

from leasehold import statechange, telemetry
from leasehold.statechange import StateChangeRecord

logger = logging.getLogger("state.change")


def now_ms() -> int:
    return int(time.time() * 1000)


class StateChangeLog:
    def __init__(self, path: str = "", controller_id: int = -1) -> None:
        self.path = path
        self.controller_id = controller_id
        self._file: TextIO | None = open(path, "a", encoding="utf-8") if path else None
        self.count = 0

    def write(self, records: Iterable[StateChangeRecord]) -> None:
        trace_id = telemetry.current_trace_id()
        lines = []
        for r in records:
            if trace_id and not r.trace_id:
                r = replace(r, trace_id=trace_id)
            line = r.to_json()
            lines.append(line)
            logger.info(line)
        if not lines:
            return
        self.count += len(lines)
        if self._file is not None:
            self._file.write("\n".join(lines) + "\n")
            self._file.flush()

    def controller(self, event: str, epoch: int, *, duration_ms: float = -1.0) -> None:
        self.write(
            [
                StateChangeRecord(
                    ts_ms=now_ms(),
                    kind="controller",
                    controller_id=self.controller_id,
                    controller_epoch=epoch,
                    event=event,
                    duration_ms=duration_ms,
                )
            ]
        )

    def broker(self, event: str, broker_id: int, epoch: int) -> None:
        self.write(
            [
                StateChangeRecord(
                    ts_ms=now_ms(),
                    kind="broker",
                    controller_id=self.controller_id,
                    controller_epoch=epoch,
                    event=event,
                    broker_id=broker_id,
                )
            ]
        )

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


ELECTED = statechange.CONTROLLER_ELECTED
FAILOVER_DONE = statechange.CONTROLLER_FAILOVER_DONE
RESIGNED = statechange.CONTROLLER_RESIGNED
BROKER_REGISTERED = statechange.BROKER_REGISTERED
BROKER_EXPIRED = statechange.BROKER_EXPIRED
BROKER_SHUTDOWN = statechange.BROKER_SHUTDOWN_REQUESTED
