"""Reassignment replication throttles (KIP-73) as topic config edits."""

from __future__ import annotations

import pytest

from services.controller import codec
from services.controller.flows import throttles

L, F = throttles.LEADER_THROTTLED, throttles.FOLLOWER_THROTTLED

EDITS = [
    ("set on empty", {}, {0: ((1, 2, 3), (4, 5, 6))}, {L: "0:1,0:2,0:3", F: "0:4,0:5,0:6"}),
    (
        "other partitions kept",
        {L: "1:7", F: "1:8", "retention.ms": "5"},
        {0: ((1,), (2,))},
        {L: "1:7,0:1", F: "1:8,0:2", "retention.ms": "5"},
    ),
    ("replaced", {L: "0:1,0:2", F: "0:9"}, {0: ((3,), (4,))}, {L: "0:3", F: "0:4"}),
    ("removed, empty keys dropped", {L: "0:1", F: "0:4", "x": "y"}, {0: ((), ())}, {"x": "y"}),
    ("operator star left alone", {L: "*", F: "0:4"}, {0: ((), ())}, {L: "*"}),
    ("two partitions", {}, {1: ((1,), (2,)), 0: ((3,), ())}, {L: "0:3,1:1", F: "1:2"}),
]


@pytest.mark.parametrize("case", EDITS, ids=[c[0] for c in EDITS])
def test_edit_topic_config(case):
    _, entries, changes, expected = case
    assert throttles.edit_topic_config(entries, changes) == expected


def test_updater_writes_only_real_changes():
    add = throttles.config_updater({0: ((1,), (2,))})
    assert codec.decode_config(add(None)) == {L: "0:1", F: "0:2"}
    remove = throttles.config_updater({0: ((), ())})
    assert remove(None) is None  # nothing to remove: no key is created
    unchanged = codec.encode_config({"a": "b"})
    assert remove(unchanged) is unchanged
    assert codec.decode_config(remove(codec.encode_config({L: "0:1"}))) == {}
