"""Building a fetcher's request: one ``FetchSpec`` per partition ready to fetch.

A fetcher following 10,000 idle partitions rebuilds its request every round; visiting every
partition state (scattered over a large heap) cost tens of milliseconds a round on its own. So
the fetcher's states are a ``FetchStates`` dict that records which partitions it changed (the
fetcher replaces a partition's state value on every move: append, truncation, delay, epoch), and
a round re-derives only those, plus delayed partitions whose backoff ended. With nothing changed
a round returns the very same list, which the fetch session recognises without looking inside.
A partition only delayed (its fetch failed; ``carry`` moves its entry to the delayed state
value) keeps its spec while it waits, so a fetcher whose leader is gone re-sends the same specs
after the backoff instead of rebuilding thousands of them every round.
Everything is rescanned every ``rescan_ms`` (so a log start moved by retention is sent within
that time) and while the replication quota is exceeded (KIP-73 skips depend on it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from services.broker_agent.follower.fetch_state import PartitionFetchState, Phase
from services.broker_agent.follower.leader_endpoint import FetchSpec
from services.broker_agent.log import Log
from services.broker_agent.model import UNDEFINED_EPOCH, TopicPartition

Entry = tuple[PartitionFetchState, Log, FetchSpec]
SkipRule = Callable[[TopicPartition, PartitionFetchState], bool]


class FetchStates(dict[TopicPartition, PartitionFetchState]):
    """A fetcher's partition states, noting every partition set or removed since last asked
    (``changed``) and which ones are truncating."""

    def __init__(self) -> None:
        super().__init__()
        self.changed: set[TopicPartition] = set()
        self.truncating: set[TopicPartition] = set()

    def __setitem__(self, tp: TopicPartition, state: PartitionFetchState) -> None:
        super().__setitem__(tp, state)
        self.changed.add(tp)
        if state.phase is Phase.FETCHING:
            self.truncating.discard(tp)
        else:
            self.truncating.add(tp)

    def __delitem__(self, tp: TopicPartition) -> None:
        super().__delitem__(tp)
        self.changed.add(tp)
        self.truncating.discard(tp)

    def pop(self, tp: TopicPartition, *default):  # type: ignore[override]
        value = super().pop(tp, *default)
        self.changed.add(tp)
        self.truncating.discard(tp)
        return value

    def put_all(self, states: Mapping[TopicPartition, PartitionFetchState]) -> None:
        """Set every one of ``states``, each moved to the end of the order (one call for a
        LeaderAndIsr's thousands, instead of a pop and a set each)."""
        truncating, delete, put = self.truncating, super().__delitem__, super().__setitem__
        fetching = Phase.FETCHING
        for tp, state in states.items():
            if tp in self:
                delete(tp)
            put(tp, state)
            if state.phase is fetching:
                truncating.discard(tp)
            else:
                truncating.add(tp)
        self.changed.update(states)

    def pop_all(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionFetchState]:
        """Remove those of ``tps`` held here; returns them (one call for thousands)."""
        pop = super().pop
        removed = {tp: pop(tp) for tp in tps if tp in self}
        if removed:
            self.changed.update(removed)
            self.truncating.difference_update(removed)
        return removed

    def take_changed(self) -> set[TopicPartition]:
        changed, self.changed = self.changed, set()
        return changed


class FetchSpecBuilder:
    """The specs of one fetcher: (state, log, spec) per ready partition, kept across rounds."""

    def __init__(self, partition_max_bytes: int, rescan_ms: int = 5_000) -> None:
        self._max_bytes = partition_max_bytes
        self._rescan_ms = rescan_ms
        self._rescan_at: int | None = None
        self._entries: dict[TopicPartition, Entry] = {}
        self._delayed: dict[TopicPartition, int] = {}  # ready again at (ms)
        self._parked: dict[TopicPartition, Entry] = {}  # entries of delayed partitions
        self._specs: list[FetchSpec] = []

    def build(
        self,
        states: Mapping[TopicPartition, PartitionFetchState],
        now_ms: int,
        follower_log: Callable[[TopicPartition, int], Log | None],
        skip_throttled: SkipRule | None = None,
    ) -> list[FetchSpec]:
        """The specs of every partition ready to fetch (the same list object if none changed).

        ``follower_log`` returns the log to fetch into, or None (and parks the partition) when
        it no longer follows; ``skip_throttled`` (set while the replication quota is exceeded)
        says which partitions sit this round out (KIP-73).
        """
        tracked = isinstance(states, FetchStates)
        if (
            not tracked
            or skip_throttled is not None
            or self._rescan_at is None
            or now_ms >= self._rescan_at
        ):
            before, self._entries, self._delayed = self._entries, {}, {}
            parked, self._parked = self._parked, {}
            if tracked:
                states.take_changed()
            for tp, state in list(states.items()):
                entry = before.get(tp) or parked.get(tp)
                self._place(tp, state, entry, now_ms, follower_log, skip_throttled)
            # A round that skipped partitions must be followed by a full one.
            self._rescan_at = now_ms if skip_throttled is not None else now_ms + self._rescan_ms
        else:
            touched = states.take_changed()
            touched.update(tp for tp, at in self._delayed.items() if at <= now_ms)
            if not touched:
                return self._specs
            for tp in touched:
                self._delayed.pop(tp, None)
                entry = self._entries.pop(tp, None) or self._parked.pop(tp, None)
                state = states.get(tp)
                if state is not None:
                    self._place(tp, state, entry, now_ms, follower_log, None)
        self._specs = [entry[2] for entry in self._entries.values()]
        return self._specs

    def _place(
        self,
        tp: TopicPartition,
        state: PartitionFetchState,
        before: Entry | None,
        now_ms: int,
        follower_log: Callable[[TopicPartition, int], Log | None],
        skip_throttled: SkipRule | None,
    ) -> None:
        if state.phase is not Phase.FETCHING:
            return
        if state.delayed_until_ms > now_ms:
            self._delayed[tp] = state.delayed_until_ms
            if before is not None and before[0] is state:
                self._parked[tp] = before
            return
        if skip_throttled is not None and skip_throttled(tp, state):
            return
        if (
            before is not None
            and before[0] is state
            and before[1].log_start_offset == before[2].log_start_offset
        ):
            self._entries[tp] = before
            return
        log_ = follower_log(tp, state.current_leader_epoch)
        if log_ is None:
            return
        latest = log_.latest_epoch
        spec = FetchSpec(
            tp=tp,
            fetch_offset=state.fetch_offset,
            current_leader_epoch=state.current_leader_epoch,
            last_fetched_epoch=UNDEFINED_EPOCH if latest is None else latest,
            log_start_offset=log_.log_start_offset,
            max_bytes=self._max_bytes,
        )
        self._entries[tp] = (state, log_, spec)

    def carry(self, tp: TopicPartition, old: PartitionFetchState, new: PartitionFetchState) -> None:
        """``new`` is ``old`` delayed (same offsets and epoch): its spec stays the same."""
        entry = self._entries.get(tp)
        if entry is not None and entry[0] is old:
            self._entries[tp] = (new, entry[1], entry[2])

    def spec_for(self, tp: TopicPartition, state: PartitionFetchState | None) -> FetchSpec | None:
        """The spec the latest round used for ``tp``, if built from this very state value."""
        entry = self._entries.get(tp)
        return entry[2] if entry is not None and entry[0] is state else None
