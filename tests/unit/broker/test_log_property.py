"""Property: any sequence of appends, truncations, rolls, retention and watermark moves,
followed by a reopen (clean close, or a kill -9 that leaves only the page cache), gives back
the same log — and the records always match a simple model of batches."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.broker_agent.log import (
    FileHandleCache,
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    Record,
    build_batch,
    decode_records,
)

CONFIG = LogConfig(
    segment_bytes=400, segment_ms=50, index_interval_bytes=90, retention_bytes=900, retention_ms=200
)

fractions = st.floats(min_value=0, max_value=1)
operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("leader"),
            st.integers(1, 4),
            st.integers(0, 40),
            st.booleans(),
            st.integers(0, 30),
        ),
        st.tuples(
            st.just("follower"),
            st.integers(1, 3),
            st.integers(0, 3),
            st.booleans(),
            st.integers(1, 3),
        ),
        st.tuples(st.just("become_leader")),
        st.tuples(st.just("truncate"), fractions),
        st.tuples(st.just("hw"), fractions),
        st.tuples(st.just("log_start"), fractions),
        st.tuples(st.just("retention"), st.integers(0, 400)),
        st.tuples(st.just("roll")),
        st.tuples(st.just("flush")),
        st.tuples(st.just("reopen"), st.booleans()),
    ),
    min_size=1,
    max_size=60,
)


@dataclass
class Model:
    """Batches as (base offset, values); the log must always hold exactly these."""

    batches: list[tuple[int, list[bytes]]] = field(default_factory=list)
    epoch: int = 0
    now: int = 1_000_000
    counter: int = 0

    def records(self, start: int) -> list[tuple[int, bytes]]:
        return [
            (base + i, value)
            for base, values in self.batches
            for i, value in enumerate(values)
            if base + i >= start
        ]


def everything(log: Log) -> list[tuple[int, bytes | None]]:
    out: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        chunk = [r for r in decode_records(log.read(offset, 10**6).records) if r.offset >= offset]
        if not chunk:  # an empty segment (truncated to its base): skip to the next one
            offset = min(b for b in log.segment_base_offsets if b > offset)
            continue
        out += [(r.offset, r.value) for r in chunk]
        offset = chunk[-1].offset + 1
    return out


def snapshot(log: Log) -> tuple:
    leo = log.log_end_offset
    return (
        log.log_start_offset,
        leo,
        log.high_watermark,
        log.segment_base_offsets,
        # Like Kafka, loading drops an epoch entry starting at the log end: nothing proves
        # that epoch wrote anything (it may be a leader that never appended).
        [(e.epoch, e.start_offset) for e in log.epoch_entries if e.start_offset < leo],
        everything(log),
    )


def apply(log: Log, model: Model, op: tuple) -> None:
    kind = op[0]
    leo = log.log_end_offset
    if kind in ("leader", "follower"):
        count, epoch_bump = op[1], op[3]
        model.epoch += int(epoch_bump)
        values = [b"%d:" % (model.counter + i) for i in range(count)]
        model.counter += count
        if kind == "leader":
            model.now += op[4]
            values = [v + b"x" * op[2] for v in values]
            info = log.append_as_leader([Record(v) for v in values], model.epoch, model.now)
            model.batches.append((info.first_offset, values))
        else:
            data = b""
            base = leo
            for batch in range(op[4]):  # one fetch response may carry several batches
                base += op[2]  # followers may see offset gaps (compacted leaders)
                chunk = [v + b"/%d" % batch for v in values]
                data += build_batch(base, model.epoch, [Record(v) for v in chunk], model.now)
                model.batches.append((base, chunk))
                base += count
            log.append_as_follower(data)
    elif kind == "become_leader":
        model.epoch += 1
        log.assign_epoch_start_offset(model.epoch, leo)
    elif kind == "truncate":
        target = int(op[1] * leo)
        first_base = log.segment_base_offsets[0]
        log.truncate_to(target)
        if target < first_base:
            model.batches = []
        else:
            model.batches = [(b, v) for b, v in model.batches if b + len(v) - 1 < target]
    elif kind == "hw":
        log.high_watermark = int(op[1] * leo)
    elif kind == "log_start":
        start, hw = log.log_start_offset, log.high_watermark
        log.maybe_increment_log_start_offset(start + int(op[1] * (hw - start)))
    elif kind == "retention":
        log.delete_old_segments(now_ms=model.now + op[1])
        first = log.segment_base_offsets[0]
        model.batches = [(b, v) for b, v in model.batches if b >= first]
    elif kind == "roll":
        log.roll()
    elif kind == "flush":
        log.flush()


def reopen(log: Log, clean: bool) -> Log:
    high_watermark, log_start = log.high_watermark, log.log_start_offset
    if clean:
        log.close()
    else:  # kill -9: no flush, no checkpoint; the kernel still has every write
        log._local._handles.close_all()
    return Log.open(
        log.directory,
        CONFIG,
        handles=FileHandleCache(8),
        high_watermark=high_watermark,
        log_start_offset=log_start,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations, finish_cleanly=st.booleans())
def test_reopen_gives_the_same_log(ops: list[tuple], finish_cleanly: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = Log.open(Path(tmp) / "t-0", CONFIG, handles=FileHandleCache(8))
        model = Model()
        for op in ops:
            if op[0] == "reopen":
                before = snapshot(log)
                log = reopen(log, clean=op[1])
                assert snapshot(log) == before
            else:
                try:
                    apply(log, model, op)
                except OffsetOutOfRangeError:
                    raise AssertionError(f"unexpected out-of-range for {op}") from None
            assert everything(log) == model.records(log.log_start_offset)
            assert log.log_start_offset <= log.high_watermark <= log.log_end_offset
            assert log.recovery_point <= log.log_end_offset

        before = snapshot(log)
        log = reopen(log, clean=finish_cleanly)
        assert snapshot(log) == before
        log.close()
