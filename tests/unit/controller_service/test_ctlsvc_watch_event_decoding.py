"""A watch response's events are read as keys and revisions on receipt (or as raw changes:
``changes``) and turned into ``WatchEvent`` values only when first iterated (on the controller's
event loop)."""

from __future__ import annotations

from aetcd import rpc

from leasehold.etcd import client
from leasehold.etcd.client import KV, WatchEvent, WatchEvents


def _raw() -> list[rpc.Event]:
    return [
        rpc.Event(
            type=rpc.Event.PUT,
            kv=rpc.KeyValue(key=b"/a", value=b"1", create_revision=5, mod_revision=7, version=2),
        ),
        rpc.Event(
            type=rpc.Event.DELETE,
            kv=rpc.KeyValue(key=b"/b", mod_revision=9),
            prev_kv=rpc.KeyValue(key=b"/b", value=b"x", create_revision=3, mod_revision=4),
        ),
        rpc.Event(type=rpc.Event.PUT, kv=rpc.KeyValue(key=b"/c", value=b"2", mod_revision=8)),
    ]


EXPECTED = (
    WatchEvent(False, KV(b"/a", b"1", 5, 7, 2, 0)),
    WatchEvent(True, KV(b"/b", b"", 0, 9, 0, 0), KV(b"/b", b"x", 3, 4, 0, 0)),
    WatchEvent(False, KV(b"/c", b"2", 0, 8, 0, 0)),
)


def test_keys_and_revisions_are_read_without_converting(monkeypatch):
    converted: list[bytes] = []
    real = client._watch_event

    def counting(ev):
        converted.append(ev.kv.key)
        return real(ev)

    monkeypatch.setattr(client, "_watch_event", counting)
    events = WatchEvents(_raw())
    assert (len(events), events.keys(), events.last_revision, bool(events)) == (
        3,
        [b"/a", b"/b", b"/c"],
        9,
        True,
    )
    changes = [(False, b"/a", b"1"), (True, b"/b", b""), (False, b"/c", b"2")]
    assert events.changes() == changes
    assert converted == []
    assert tuple(events) == EXPECTED
    assert events.changes() == changes  # the same once converted
    assert events[1] == EXPECTED[1] and events[-1] == EXPECTED[2]
    assert list(events) == list(EXPECTED)
    assert converted == [b"/a", b"/b", b"/c"]  # once, however often read


def test_events_given_as_values_behave_the_same():
    events = WatchEvents(events=EXPECTED)
    assert (len(events), events.keys(), events.last_revision, tuple(events)) == (
        3,
        [b"/a", b"/b", b"/c"],
        9,
        EXPECTED,
    )
    assert events.changes() == [(False, b"/a", b"1"), (True, b"/b", b""), (False, b"/c", b"2")]
    empty = WatchEvents()
    assert (len(empty), empty.keys(), empty.last_revision, bool(empty)) == (0, [], 0, False)
