"""The safety and liveness checkers of a chaos run: pure functions over collected evidence.

Each checker takes plain values (what producers were told, what readers saw, what brokers and
controllers logged, what etcd recorded) and returns a :class:`CheckResult` saying what it looked
at and listing violations. Nothing here performs I/O, so every checker is unit-tested with small
hand-built histories, including ones that must fail.

Record identity: every value a producer sends is a unique id string, so "the record at offset o"
is comparable across the acknowledgement, the live consumer, the final read and each replica's
log on disk.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAX_LISTED = 10  # violations quoted per check; the count is always complete

Log = Mapping[int, Sequence[tuple[int, str]]]  # partition -> [(offset, record id)] in read order


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    summary: str  # what was checked, with counts
    problems: tuple[str, ...] = ()

    def render(self) -> str:
        head = f"[{'PASS' if self.ok else 'FAIL'}] {self.name}: {self.summary}"
        return "\n".join([head, *(f"    - {p}" for p in self.problems)])


def _result(name: str, summary: str, problems: list[str]) -> CheckResult:
    shown = problems[:MAX_LISTED]
    if len(problems) > MAX_LISTED:
        shown.append(f"... and {len(problems) - MAX_LISTED} more")
    return CheckResult(name, not problems, summary, tuple(shown))


@dataclass(frozen=True)
class Ack:
    """A record the producer was told is written (acks=all) at ``partition``/``offset``."""

    producer: int
    seq: int  # send order within the producer
    partition: int
    offset: int
    rid: str


@dataclass(frozen=True)
class Seen:
    """One record as a reader (the live consumer, a replica on disk) saw it."""

    reader: str
    partition: int
    offset: int
    rid: str


@dataclass(frozen=True)
class LeaderClaim:
    """Evidence that ``broker`` led ``topic-partition`` in ``leader_epoch``, and from where."""

    topic: str
    partition: int
    leader_epoch: int
    broker: int
    source: str  # "etcd@<revision>", "state-change-<controller>", "broker-<id>.log"


# ------------------------------------------------------------------------ records and offsets


def check_log_shape(final: Log, sent: set[str]) -> CheckResult:
    """The final read of each partition: offsets from 0, strictly increasing, without gaps, and
    every record one that some producer sent (no phantom records)."""
    problems: list[str] = []
    records = 0
    for partition, rows in sorted(final.items()):
        expected = 0
        for offset, rid in rows:
            records += 1
            if offset != expected:
                kind = "went back" if offset < expected else "skipped ahead"
                problems.append(f"p{partition}: offset {offset} where {expected} was due ({kind})")
                expected = max(expected, offset + 1)
            else:
                expected += 1
            if rid not in sent:
                problems.append(f"p{partition}@{offset}: record {rid!r} was never sent")
    return _result(
        "log shape",
        f"{records} records in {len(final)} partitions: offsets contiguous from 0, no phantoms",
        problems,
    )


def check_acknowledged(acks: Iterable[Ack], final: Log) -> CheckResult:
    """Every acknowledged record is in the final read at the offset it was acknowledged with."""
    at = {(p, o): rid for p, rows in final.items() for o, rid in rows}
    problems: list[str] = []
    count = 0
    for a in acks:
        count += 1
        found = at.get((a.partition, a.offset))
        if found is None:
            problems.append(f"{a.rid} acknowledged at p{a.partition}@{a.offset}: offset missing")
        elif found != a.rid:
            problems.append(f"{a.rid} acknowledged at p{a.partition}@{a.offset}: holds {found}")
    return _result(
        "acknowledged records read back",
        f"{count} acknowledged records each found at its acknowledged offset",
        problems,
    )


def check_ack_order(acks: Iterable[Ack]) -> CheckResult:
    """Per producer and partition, records sent later were acknowledged at higher offsets."""
    lanes: dict[tuple[int, int], list[Ack]] = defaultdict(list)
    for a in acks:
        lanes[(a.producer, a.partition)].append(a)
    problems: list[str] = []
    for (producer, partition), lane in sorted(lanes.items()):
        lane.sort(key=lambda a: a.seq)
        for before, after in zip(lane, lane[1:], strict=False):
            if after.offset <= before.offset:
                problems.append(
                    f"producer {producer} p{partition}: {after.rid} (sent after {before.rid}) "
                    f"at offset {after.offset} <= {before.offset}"
                )
    return _result(
        "acknowledged in send order",
        f"{len(lanes)} producer/partition lanes have strictly increasing offsets",
        problems,
    )


def check_exactly_once_in_order(final: Log) -> CheckResult:
    """The idempotent producer's promise, read off the final log: per producer and partition
    no sequence (record id ``p<producer>-<seq>``) is stored twice, and records sent later sit
    at higher offsets (retries after a lost answer or a leader change neither duplicate nor
    reorder)."""
    problems: list[str] = []
    lanes: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)  # (seq, offset)
    for partition, rows in sorted(final.items()):
        for offset, rid in rows:
            producer, dash, seq = rid.rpartition("-")
            if dash and seq.isdigit():
                lanes[(producer, partition)].append((int(seq), offset))
    records = 0
    for (producer, partition), lane in sorted(lanes.items()):
        records += len(lane)
        first_at: dict[int, int] = {}
        for seq, offset in lane:
            if seq in first_at:
                problems.append(
                    f"{producer} p{partition}: sequence {seq} stored twice "
                    f"(offsets {first_at[seq]} and {offset})"
                )
            else:
                first_at[seq] = offset
        by_seq = sorted(first_at.items())
        for (seq_a, off_a), (seq_b, off_b) in zip(by_seq, by_seq[1:], strict=False):
            if off_b < off_a:
                problems.append(
                    f"{producer} p{partition}: sequence {seq_b} at offset {off_b}, before "
                    f"sequence {seq_a} at {off_a}"
                )
    return _result(
        "no duplicate or reordered sequence",
        f"{records} records in {len(lanes)} producer/partition lanes: each sequence once, "
        "in send order",
        problems,
    )


def check_reads_agree(seen: Iterable[Seen], final: Log) -> CheckResult:
    """No offset held two different records across reads, and each reader's offsets per
    partition strictly increased (it never re-read or skipped back)."""
    at = {(p, o): rid for p, rows in final.items() for o, rid in rows}
    last: dict[tuple[str, int], int] = {}
    problems: list[str] = []
    count = 0
    readers: set[str] = set()
    for s in seen:
        count += 1
        readers.add(s.reader)
        found = at.get((s.partition, s.offset))
        if found != s.rid:
            now = "is missing" if found is None else f"now holds {found}"
            problems.append(f"{s.reader} read {s.rid} at p{s.partition}@{s.offset}; the log {now}")
        prev = last.get((s.reader, s.partition))
        if prev is not None and s.offset <= prev:
            problems.append(f"{s.reader} p{s.partition}: offset {s.offset} after {prev}")
        last[(s.reader, s.partition)] = s.offset
    return _result(
        "reads agree",
        f"{count} records read by {len(readers)} readers match the final log, in order",
        problems,
    )


def check_replicas_agree(
    replicas: Mapping[tuple[int, int], Sequence[tuple[int, str, int]]], final: Log
) -> CheckResult:
    """After recovery every replica (partition, broker) holds exactly the final log, and the
    replicas of a partition stamped each offset with the same leader epoch (they copied the
    leader's batches verbatim)."""
    problems: list[str] = []
    epochs: dict[tuple[int, int], tuple[int, int]] = {}  # (partition, offset) -> (epoch, broker)
    for (partition, broker), rows in sorted(replicas.items()):
        mine = [(o, rid) for o, rid, _ in rows]
        want = list(final.get(partition, ()))
        if mine != want:
            diverge = next(
                (i for i, (x, y) in enumerate(zip(mine, want, strict=False)) if x != y),
                min(len(mine), len(want)),
            )
            problems.append(
                f"p{partition} on broker {broker}: {len(mine)} records vs {len(want)} in the "
                f"final read; first difference at index {diverge}"
            )
        for offset, _, epoch in rows:
            other = epochs.setdefault((partition, offset), (epoch, broker))
            if other[0] != epoch:
                problems.append(
                    f"p{partition}@{offset}: leader epoch {epoch} on broker {broker}, "
                    f"{other[0]} on broker {other[1]}"
                )
    return _result(
        "replicas agree",
        f"{len(replicas)} replicas hold the final log with identical leader epochs",
        problems,
    )


# ------------------------------------------------------------------------------ leadership


def check_one_leader_per_epoch(claims: Iterable[LeaderClaim]) -> CheckResult:
    """For each partition and leader epoch, every source names the same single broker."""
    by_epoch: dict[tuple[str, int, int], dict[int, list[str]]] = defaultdict(dict)
    sources: dict[str, int] = defaultdict(int)
    for c in claims:
        by_epoch[(c.topic, c.partition, c.leader_epoch)].setdefault(c.broker, []).append(c.source)
        sources[c.source.split("@")[0]] += 1
    problems = [
        f"{t}-{p} epoch {e}: "
        + "; ".join(f"broker {b} per {', '.join(sorted(set(s)))}" for b, s in sorted(who.items()))
        for (t, p, e), who in sorted(by_epoch.items())
        if len(who) > 1
    ]
    evidence = ", ".join(f"{n} from {s}" for s, n in sorted(sources.items()))
    return _result(
        "one leader per partition epoch",
        f"{len(by_epoch)} (partition, leader epoch) pairs; claims: {evidence or 'none'}",
        problems,
    )


def check_broker_actions_committed(
    broker_claims: Iterable[LeaderClaim], committed: Iterable[LeaderClaim]
) -> CheckResult:
    """Every leadership a broker acted on (became leader or follower of leader L in epoch E)
    was committed to etcd by a controller first: brokers apply only fenced decisions."""
    known = {(c.topic, c.partition, c.leader_epoch, c.broker) for c in committed}
    problems: list[str] = []
    count = 0
    for c in broker_claims:
        count += 1
        if (c.topic, c.partition, c.leader_epoch, c.broker) not in known:
            problems.append(
                f"{c.source}: acted on leader {c.broker} of {c.topic}-{c.partition} in epoch "
                f"{c.leader_epoch}, which etcd never recorded"
            )
    return _result(
        "brokers acted only on committed leadership",
        f"{count} broker leadership transitions matched against etcd history",
        problems,
    )


# ------------------------------------------------------------------------- controller epochs


@dataclass(frozen=True)
class EpochBump:
    revision: int
    epoch: int
    controller_id: int


@dataclass(frozen=True)
class ControllerWrite:
    """A controller-written value (partition state, admin result) and the epoch it carries."""

    revision: int
    key: str
    controller_epoch: int


def check_controller_epochs(bumps: Sequence[EpochBump], writes: Sequence[ControllerWrite]):
    """Controller epochs only grow, and every controller-written value carries the epoch that
    was current at its revision: no deposed (zombie) controller got a write through."""
    problems: list[str] = []
    ordered = sorted(bumps, key=lambda b: b.revision)
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after.epoch <= before.epoch:
            problems.append(
                f"epoch went from {before.epoch} to {after.epoch} at revision {after.revision}"
            )
    current = 0
    pending = sorted(writes, key=lambda w: w.revision)
    i = 0
    for w in pending:
        while i < len(ordered) and ordered[i].revision <= w.revision:
            current = ordered[i].epoch
            i += 1
        if w.controller_epoch != current:
            problems.append(
                f"{w.key} written at revision {w.revision} with controller epoch "
                f"{w.controller_epoch} while epoch {current} was current"
            )
    return _result(
        "no stale controller epoch applied in etcd",
        f"{len(ordered)} epoch bumps, {len(writes)} controller writes each carrying the current "
        "epoch",
        problems,
    )


@dataclass(frozen=True)
class EpochSighting:
    """A broker's Metadata answer named ``epoch`` as its controller epoch at time ``t``."""

    t: float
    broker: int
    epoch: int


def check_broker_controller_epochs(sightings: Sequence[EpochSighting], max_epoch: int):
    """The controller epoch each broker reports never goes back (a restarted broker reports
    none, <= 0, until its first request) and never exceeds what etcd holds."""
    problems: list[str] = []
    highest: dict[int, EpochSighting] = {}
    for s in sorted(sightings, key=lambda s: s.t):
        if s.epoch <= 0:
            continue
        if s.epoch > max_epoch:
            problems.append(f"broker {s.broker} reported epoch {s.epoch} > etcd's {max_epoch}")
        top = highest.get(s.broker)
        if top is not None and s.epoch < top.epoch:
            problems.append(
                f"broker {s.broker} went from controller epoch {top.epoch} (t={top.t:.1f}s) "
                f"back to {s.epoch} (t={s.t:.1f}s)"
            )
        if top is None or s.epoch > top.epoch:
            highest[s.broker] = s
    return _result(
        "brokers never went back to an older controller epoch",
        f"{len(sightings)} Metadata sightings from {len(highest)} brokers",
        problems,
    )


# ------------------------------------------------------------------------------- liveness


@dataclass(frozen=True)
class Recovery:
    """How long after the last fault every partition with a live ISR replica was online."""

    bound_s: float
    took_s: float | None  # None: not within the bound
    still_offline: tuple[str, ...] = field(default_factory=tuple)


def check_recovery(r: Recovery) -> CheckResult:
    problems = []
    if r.took_s is None or r.took_s > r.bound_s:
        problems.append(f"still offline after {r.bound_s:.0f}s: {', '.join(r.still_offline)}")
    took = "never" if r.took_s is None else f"{r.took_s:.1f}s"
    return _result(
        "partitions online after the last fault",
        f"every partition with a running ISR replica had a serving leader after {took} "
        f"(bound {r.bound_s:.0f}s)",
        problems,
    )
