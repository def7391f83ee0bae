"""The structured state-change log: one JSON line per transition (``leasehold.statechange``).

Lines go to the ``--state-change-log`` file and to the ``state.change`` logger. Controller
lifecycle records (elected with its epoch, failover done with its duration, resigned) go through
the same writer.

Writing is deferred: ``write`` only keeps the records (and the trace they belong to), and the
controller calls ``flush`` at the end of every event, which encodes them and writes the file
(in pieces of ``WRITE_LINES``; an event that keeps more than ``MAX_PENDING`` records has them
written as they come). So the file is current whenever the event loop is idle, a clean stop
loses nothing (a crash loses at most the event being handled, which a new controller redoes
from etcd anyway), and the encoding happens after the event's answer (a controlled shutdown's,
say) has left. A failover at 10,000 partitions writes tens of thousands of records: one write
and flush per plan on the event loop, and the per-record encoding, were most of its time.

The controller's end-of-event flush is ``flush_async``: the same encoding, in slices of
``FLUSH_SLICE`` records with the event loop let go between them. A broker failure at 10,000
partitions leaves some 30,000 records (a few hundred ms of encoding on a loaded machine), and the
survivors answer the elections' LeaderAndIsr meanwhile: the broker senders must take those
answers and send the UpdateMetadata queued behind them (what makes brokers show the new leaders)
without waiting for the log. The file still gets the event's records before the next event
starts.

The logger gets lifecycle records (controller and broker) at INFO and partition/replica records
at DEBUG only: at INFO a large failover would format tens of thousands of log lines, and the
file is the record the pipeline reads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import TextIO

from leasehold import channels, statechange, telemetry
from leasehold.statechange import StateChangeRecord

logger = logging.getLogger("state.change")

_TRANSITIONS = ("partition", "replica")
# Records encoded between two yields of ``flush_async`` (a few ms of work).
FLUSH_SLICE = 1_000
# Records kept before ``write`` writes them itself; lines encoded before they are written.
MAX_PENDING = 100_000
WRITE_LINES = 50_000


def now_ms() -> int:
    return int(time.time() * 1000)


class StateChangeLog:
    def __init__(self, path: str = "", controller_id: int = -1) -> None:
        self.path = path
        self.controller_id = controller_id
        self._file: TextIO | None = open(path, "a", encoding="utf-8") if path else None
        self._pending: list[tuple[tuple[StateChangeRecord, ...], str]] = []
        self._pending_count = 0
        self.count = 0

    def write(self, records: Iterable[StateChangeRecord]) -> None:
        """Keep ``records`` for the next ``flush``, stamped with the current trace; once more
        than ``MAX_PENDING`` wait, write them now (an event creating a million partitions
        would otherwise keep millions of records in memory until its end)."""
        batch = tuple(records)
        if batch:
            self._pending.append((batch, telemetry.current_trace_id()))
            self.count += len(batch)
            self._pending_count += len(batch)
            if self._pending_count > MAX_PENDING:
                self.flush()

    def flush(self) -> None:
        """Encode what ``write`` kept into the file and the logger."""
        pending, self._pending, self._pending_count = self._pending, [], 0
        if not pending or not self._wanted():
            return
        lines: list[str] = []
        for records, trace_id in pending:
            for start in range(0, len(records), FLUSH_SLICE):
                self._encode(records[start : start + FLUSH_SLICE], trace_id, lines)
                if len(lines) >= WRITE_LINES:
                    self._write(lines)
                    lines = []
        self._write(lines)

    async def flush_async(self) -> None:
        """``flush``, letting the event loop run other tasks every ``FLUSH_SLICE`` records
        (module docstring). Records kept while it runs wait for the next flush; if it is
        cancelled, everything it took and did not write stays pending (``close`` writes it)."""
        pending, self._pending, self._pending_count = self._pending, [], 0
        if not pending or not self._wanted():
            return
        lines: list[str] = []
        since_yield = 0
        done = 0  # batches of ``pending`` whose lines are in the file
        try:
            for i, (records, trace_id) in enumerate(pending):
                for start in range(0, len(records), FLUSH_SLICE):
                    if since_yield >= FLUSH_SLICE:
                        await channels.give_calls_a_turn()
                        since_yield = 0
                    piece = records[start : start + FLUSH_SLICE]
                    self._encode(piece, trace_id, lines)
                    since_yield += len(piece)
                if len(lines) >= WRITE_LINES:  # whole batches at a time
                    self._write(lines)
                    lines, done = [], i + 1
        except BaseException:
            self._pending[:0] = pending[done:]
            self._pending_count += sum(len(r) for r, _ in pending[done:])
            raise
        self._write(lines)

    def _wanted(self) -> bool:
        return self._file is not None or logger.isEnabledFor(logging.INFO)

    @staticmethod
    def _encode(records: Iterable[StateChangeRecord], trace_id: str, lines: list[str]) -> None:
        info = logger.isEnabledFor(logging.INFO)
        debug = info and logger.isEnabledFor(logging.DEBUG)
        for r in records:
            line = r.to_json(trace_id)
            lines.append(line)
            if r.kind not in _TRANSITIONS:
                if info:
                    logger.info(line)
            elif debug:
                logger.debug(line)

    def _write(self, lines: list[str]) -> None:
        if self._file is not None and lines:
            lines.append("")
            self._file.write("\n".join(lines))
            self._file.flush()

    def controller(
        self,
        event: str,
        epoch: int,
        *,
        duration_ms: float = -1.0,
        ts_ms: int = 0,
        detected_ms: int = -1,
        lease_ttl_ms: int = -1,
    ) -> None:
        """A controller lifecycle record; ``ts_ms`` defaults to now (evidence fields: see
        :class:`~leasehold.statechange.StateChangeRecord`)."""
        self.write(
            [
                StateChangeRecord(
                    ts_ms=ts_ms or now_ms(),
                    kind="controller",
                    controller_id=self.controller_id,
                    controller_epoch=epoch,
                    event=event,
                    duration_ms=duration_ms,
                    detected_ms=detected_ms,
                    lease_ttl_ms=lease_ttl_ms,
                )
            ]
        )

    def broker(
        self,
        event: str,
        broker_id: int,
        epoch: int,
        *,
        detected_ms: int = -1,
        lease_ttl_ms: int = -1,
        registered_ms: int = -1,
    ) -> None:
        self.write(
            [
                StateChangeRecord(
                    ts_ms=now_ms(),
                    kind="broker",
                    controller_id=self.controller_id,
                    controller_epoch=epoch,
                    event=event,
                    broker_id=broker_id,
                    detected_ms=detected_ms,
                    lease_ttl_ms=lease_ttl_ms,
                    registered_ms=registered_ms,
                )
            ]
        )

    def close(self) -> None:
        if self._file is not None:
            self.flush()
            self._file.close()
            self._file = None


ELECTED = statechange.CONTROLLER_ELECTED
FAILOVER_DONE = statechange.CONTROLLER_FAILOVER_DONE
METADATA_PUSHED = statechange.CONTROLLER_METADATA_PUSHED
RESIGNED = statechange.CONTROLLER_RESIGNED
HEARTBEAT = statechange.CONTROLLER_HEARTBEAT
BROKER_REGISTERED = statechange.BROKER_REGISTERED
BROKER_EXPIRED = statechange.BROKER_EXPIRED
BROKER_SHUTDOWN = statechange.BROKER_SHUTDOWN_REQUESTED
