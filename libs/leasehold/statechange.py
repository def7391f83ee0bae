"""The structured state-change log: one JSON object per line.

The controller writes a record for every partition or replica state transition and for its own
lifecycle (elected, failover done, resigned). The pipeline's ``analyze`` job reads these lines back,
so this module is the single definition of the format.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["partition", "replica", "controller", "broker"]

# Values of ``event`` for kind == "controller".
CONTROLLER_ELECTED = "elected"  # won the election and bumped the epoch
CONTROLLER_FAILOVER_DONE = "failover_done"  # metadata pushed, state machines started
# The failover's UpdateMetadata to every broker: ``ts_ms`` when it began (the cluster read up
# to the epoch bump), ``duration_ms`` until every broker had answered it (or the push gave up).
CONTROLLER_METADATA_PUSHED = "metadata_pushed"
CONTROLLER_RESIGNED = "resigned"
# Written by the active controller every heartbeat interval: a proof that it (and its event
# loop) was alive then, the best evidence of when it stopped if it dies without resigning.
CONTROLLER_HEARTBEAT = "heartbeat"
# Values of ``event`` for kind == "broker".
BROKER_REGISTERED = "registered"
BROKER_EXPIRED = "expired"  # lease lost or key deleted
BROKER_SHUTDOWN_REQUESTED = "controlled_shutdown"

# Compact separators; keys are inserted in sorted order by ``to_json``, so no per-line sort.
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
# What ``json.dumps`` (ensure_ascii, the default) writes for a string, quotes included.
_ESCAPE = json.encoder.encode_basestring_ascii


@dataclass(frozen=True)
class StateChangeRecord:
    """One line of the state-change log.

    ``ts_ms`` is wall-clock milliseconds since the epoch. For partition records ``replica`` is -1;
    for replica records it is the broker id. ``reason`` names the flow or selector that caused the
    change (e.g. "offline", "preferred", "reassigned", "controlled_shutdown", "new", "unclean",
    "isr_shrink", "isr_expand", "deletion").

    Evidence of when a fault began (-1 when not known), so an analysis need not date a fault by
    when the controller got round to recording it:

    - ``detected_ms``: when the controller learned of the change: the etcd watch delivered a
      broker's lost registration (``expired``), or the campaign was won (``elected``).
    - ``lease_ttl_ms``: the TTL of the lease whose loss the record reports (the broker's, or the
      predecessor controller's). A lease expires one TTL after its last confirmed keep-alive, so
      ``detected_ms - lease_ttl_ms`` dates the last sign of life.
    - ``registered_ms``: the broker's own registration time (for ``registered``, the new one; for
      ``expired``, the incarnation that was lost: it was alive then).
    """

    ts_ms: int
    kind: Kind
    controller_id: int
    controller_epoch: int
    topic: str = ""
    partition: int = -1
    replica: int = -1
    from_state: str = ""
    to_state: str = ""
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = field(default_factory=tuple)
    reason: str = ""
    event: str = ""
    broker_id: int = -1
    duration_ms: float = -1.0
    trace_id: str = ""
    detected_ms: int = -1
    lease_ttl_ms: int = -1
    registered_ms: int = -1

    def to_json(self, trace_id: str = "") -> str:
        """One JSON line, keys sorted; ``trace_id`` is used when the record has none.

        Formatted directly, strings escaped by the ``json`` module's C escaper, which is what
        ``json.dumps`` (compact separators, sorted keys) writes for these fields at under half
        its cost: a broker failure at 10,000 partitions logs some 30,000 records in the seconds
        the brokers are being told. A non-finite duration (``NaN``, ``Infinity``) goes
        through the encoder itself.
        """
        d = self.duration_ms
        if isinstance(d, float) and not math.isfinite(d):
            return self._encoded(trace_id)
        esc = _ESCAPE
        return (
            f'{{"broker_id":{self.broker_id!r},"controller_epoch":{self.controller_epoch!r},'
            f'"controller_id":{self.controller_id!r},"detected_ms":{self.detected_ms!r},'
            f'"duration_ms":{d!r},'
            f'"event":{esc(self.event)},"from_state":{esc(self.from_state)},'
            f'"isr":[{",".join(map(repr, self.isr))}],"kind":{esc(self.kind)},'
            f'"leader":{self.leader!r},"leader_epoch":{self.leader_epoch!r},'
            f'"lease_ttl_ms":{self.lease_ttl_ms!r},'
            f'"partition":{self.partition!r},"reason":{esc(self.reason)},'
            f'"registered_ms":{self.registered_ms!r},'
            f'"replica":{self.replica!r},"to_state":{esc(self.to_state)},'
            f'"topic":{esc(self.topic)},"trace_id":{esc(self.trace_id or trace_id)},'
            f'"ts_ms":{self.ts_ms!r}}}'
        )

    def _encoded(self, trace_id: str) -> str:
        """``to_json`` through the JSON encoder (a hand-written dict in key order rather than
        ``dataclasses.asdict``, a recursive deep copy)."""
        return _ENCODE(
            {
                "broker_id": self.broker_id,
                "controller_epoch": self.controller_epoch,
                "controller_id": self.controller_id,
                "detected_ms": self.detected_ms,
                "duration_ms": self.duration_ms,
                "event": self.event,
                "from_state": self.from_state,
                "isr": list(self.isr),
                "kind": self.kind,
                "leader": self.leader,
                "leader_epoch": self.leader_epoch,
                "lease_ttl_ms": self.lease_ttl_ms,
                "partition": self.partition,
                "reason": self.reason,
                "registered_ms": self.registered_ms,
                "replica": self.replica,
                "to_state": self.to_state,
                "topic": self.topic,
                "trace_id": self.trace_id or trace_id,
                "ts_ms": self.ts_ms,
            }
        )

    @classmethod
    def from_json(cls, line: str) -> StateChangeRecord:
        data = json.loads(line)
        data["isr"] = tuple(data.get("isr", ()))
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})
