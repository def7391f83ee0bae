"""The idempotent producer's sequence state machine (Kafka's ProducerAppendInfo), as a table."""

from __future__ import annotations

import pytest

from services.broker_agent.log.errors import (
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from services.broker_agent.log.producer_state import (
    RETAINED_BATCHES,
    BatchMetadata,
    ProducerEntry,
    check_sequence,
)

MAX = 2**31 - 1
APPEND = "append"


def entry(epoch: int, *ranges: tuple[int, int]) -> ProducerEntry:
    """A producer at ``epoch`` whose retained batches hold these sequence ranges; batch i sits
    at offsets 100 * i .. 100 * i + (last - first)."""
    e = ProducerEntry(7, epoch)
    for i, (first, last) in enumerate(ranges):
        count = (last - first) % (MAX + 1) + 1
        e.add(epoch, BatchMetadata(first, last, 100 * i, 100 * i + count - 1, 1_000 + i))
    return e


# (name, current entry or None, incoming (epoch, first seq, last seq), expected verdict):
# APPEND, ("duplicate", first offset of the batch it repeats), or the error raised.
CASES = [
    ("unknown producer from sequence 0", None, (3, 0, 9), APPEND),
    ("unknown producer past sequence 0", None, (0, 42, 50), UnknownProducerIdError),
    ("in order", entry(0, (0, 9)), (0, 10, 19), APPEND),
    ("in order after several", entry(0, (0, 9), (10, 19)), (0, 20, 20), APPEND),
    ("duplicate of the last batch", entry(0, (0, 9), (10, 19)), (0, 10, 19), ("dup", 100)),
    ("duplicate of an older retained batch", entry(0, (0, 9), (10, 19)), (0, 0, 9), ("dup", 0)),
    ("gap", entry(0, (0, 9)), (0, 11, 20), OutOfOrderSequenceError),
    ("overlap that is not a retained batch", entry(0, (0, 9)), (0, 5, 14), OutOfOrderSequenceError),
    ("sequence from the past", entry(0, (10, 19)), (0, 0, 9), OutOfOrderSequenceError),
    ("fenced producer epoch", entry(2, (0, 9)), (1, 10, 19), InvalidProducerEpochError),
    ("fenced epoch repeating a batch", entry(2, (0, 9)), (1, 0, 9), InvalidProducerEpochError),
    ("new epoch from sequence 0", entry(1, (0, 9)), (2, 0, 4), APPEND),
    ("new epoch not from 0", entry(1, (0, 9)), (2, 10, 19), OutOfOrderSequenceError),
    ("wrap past 2^31-1", entry(0, (MAX - 9, MAX)), (0, 0, 9), APPEND),
    ("batch spanning the wrap", entry(0, (MAX - 19, MAX - 10)), (0, MAX - 9, 0), APPEND),
    ("gap at the wrap", entry(0, (MAX - 9, MAX)), (0, 1, 9), OutOfOrderSequenceError),
]


@pytest.mark.parametrize(("current", "incoming", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_sequence_verdicts(current, incoming, expected) -> None:
    if isinstance(expected, type):
        with pytest.raises(expected):
            check_sequence(current, *incoming)
        return
    verdict = check_sequence(current, *incoming)
    if expected == APPEND:
        assert verdict is None
    else:
        assert verdict is not None and verdict.first_offset == expected[1]


def test_only_the_last_batches_are_retained_and_a_new_epoch_forgets_them() -> None:
    e = entry(0, *[(10 * i, 10 * i + 9) for i in range(RETAINED_BATCHES + 2)])
    assert [b.first_seq for b in e.batches] == [10 * i for i in range(2, RETAINED_BATCHES + 2)]
    with pytest.raises(OutOfOrderSequenceError):  # batch 0 is no longer known: not a duplicate
        check_sequence(e, 0, 0, 9)
    e.add(1, BatchMetadata(0, 4, 900, 904, 2_000))
    assert (e.epoch, [b.first_seq for b in e.batches]) == (1, [0])
    assert check_sequence(e, 1, 0, 4) == BatchMetadata(0, 4, 900, 904, 2_000)
