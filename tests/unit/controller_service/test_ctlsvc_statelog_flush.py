"""The end-of-event state-change flush lets other tasks run between slices of its encoding (the
broker senders take LeaderAndIsr answers and send the UpdateMetadata behind them), writes the
same file as the one-go ``flush``, and keeps everything pending if it is cancelled."""

from __future__ import annotations

import asyncio

import pytest

from leasehold.statechange import StateChangeRecord
from services.controller import statelog
from services.controller.statelog import StateChangeLog


def _records(n: int, first: int = 0) -> list[StateChangeRecord]:
    return [
        StateChangeRecord(
            1_000 + i,
            "replica",
            1,
            2,
            "t",
            i % 7,
            2,
            "OnlineReplica",
            "OfflineReplica",
            -1,
            4,
            (1,),
            "offline",
        )  # fmt: skip
        for i in range(first, first + n)
    ]


@pytest.mark.parametrize(
    "batches, slice_, yields",
    [
        ((10,), 1_000, 0),  # one slice: no yield
        ((2_500,), 1_000, 2),  # slices of 1,000, 1,000 and 500
        ((600, 600, 600), 1_000, 1),  # counted across the event's record batches
        ((3, 3, 3, 3), 2, 4),  # split inside batches too: 2 | 1+2 | 1+2 | 1+2 | 1
    ],
)
async def test_flush_async_yields_between_slices_and_writes_what_flush_writes(
    tmp_path, monkeypatch, batches, slice_, yields
) -> None:
    monkeypatch.setattr(statelog, "FLUSH_SLICE", slice_)
    paths = tmp_path / "async.log", tmp_path / "sync.log"
    logs = [StateChangeLog(str(p), controller_id=1) for p in paths]
    first = 0
    for n in batches:
        for log in logs:
            log.write(_records(n, first))
        first += n
    ran: list[int] = []
    turns: list[int] = []
    give_turn = statelog.channels.give_calls_a_turn

    async def counted_turn() -> None:
        turns.append(len(ran))
        await give_turn()

    monkeypatch.setattr(statelog.channels, "give_calls_a_turn", counted_turn)

    async def other() -> None:  # a broker sender: runs whenever the flush lets go
        while True:
            ran.append(len(paths[0].read_text()) if paths[0].exists() else 0)
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    ran.clear()
    await logs[0].flush_async()
    task.cancel()
    logs[1].flush()
    for log in logs:
        log.close()
    assert len(turns) == yields
    # Other tasks ran during every turn the flush gave (and none before the first).
    ends = [*turns[1:], len(ran)] if turns else []
    assert all(end > start for start, end in zip(turns, ends, strict=True))
    assert bool(ran) == bool(yields)
    assert all(size == 0 for size in ran)  # the file gets the event's records in one write
    text = paths[0].read_text()
    assert text == paths[1].read_text()
    assert len(text.splitlines()) == sum(batches)


async def test_a_cancelled_flush_async_leaves_every_record_pending(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(statelog, "FLUSH_SLICE", 10)
    path = tmp_path / "sc.log"
    log = StateChangeLog(str(path), controller_id=1)
    log.write(_records(25))
    flushing = asyncio.create_task(log.flush_async())
    await asyncio.sleep(0)  # it encoded the first slice and yielded
    log.write(_records(5, 25))  # a record kept meanwhile goes after those taken
    flushing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await flushing
    assert path.read_text() == ""
    log.close()  # writes what is pending
    lines = path.read_text().splitlines()
    assert [line.split('"ts_ms":')[1].rstrip("}") for line in lines] == [
        str(1_000 + i) for i in range(30)
    ]


async def test_records_past_the_pending_bound_are_written_at_once_and_flushes_write_in_pieces(
    tmp_path, monkeypatch
) -> None:
    """An event that keeps more than ``MAX_PENDING`` records has them written as they come,
    and a flush writes ``WRITE_LINES`` at a time: memory stays bounded, and nothing is lost,
    doubled or reordered (a cancelled flush keeps what it did not write)."""
    monkeypatch.setattr(statelog, "MAX_PENDING", 20)
    monkeypatch.setattr(statelog, "WRITE_LINES", 8)
    monkeypatch.setattr(statelog, "FLUSH_SLICE", 4)
    path = tmp_path / "sc.log"
    log = StateChangeLog(str(path), controller_id=1)
    log.write(_records(15))
    assert path.read_text() == ""
    log.write(_records(10, 15))  # 25 kept: past the bound, written now
    assert len(path.read_text().splitlines()) == 25
    for first in (25, 30, 35):
        log.write(_records(5, first))
    flushing = asyncio.create_task(log.flush_async())
    for _ in range(3):
        await asyncio.sleep(0)
    flushing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await flushing
    log.close()
    lines = path.read_text().splitlines()
    assert [line.split('"ts_ms":')[1].rstrip("}") for line in lines] == [
        str(1_000 + i) for i in range(40)
    ]
