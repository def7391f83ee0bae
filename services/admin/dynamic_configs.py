"""DescribeConfigs and AlterConfigs (incremental) over the stored config overrides.

Overrides live as text in ``ConfigEntries`` (``/config/topics/<name>``, ``/config/brokers/<id>``
and the cluster-wide default, broker name ""). Describing resolves every key of the schema to its
effective value and source; altering applies SET / DELETE / APPEND / SUBTRACT to the stored text,
validates the result as a whole with :mod:`leasehold.configs`, and writes every resource of the
request in one compare-and-set transaction on the keys as they were read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from leasehold import configs
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError, NotFoundError
from leasehold.etcd.client import cmp_create_revision, cmp_mod_revision, op_delete, op_put
from leasehold.metadata.v1 import metadata_pb2
from leasehold.validation import quote, topic_name_problem
from services.admin.config import Limits
from services.admin.model import OK, Outcome
from services.admin.operations import optimistic
from services.admin.snapshot import Snapshot
from services.admin.store import AdminStore, Change, Want
from services.admin.validate import (
    check_topic_names,
    for_item,
    no_duplicates,
    not_empty,
    parse_broker_id,
    require_live_topic,
    require_topic,
    validating,
)

_INVALID = common_pb2.ERROR_CODE_INVALID_REQUEST


@dataclass(frozen=True)
class Resource:
    """A topic, a broker (``name`` its id) or the cluster default (broker with ``name == ""``)."""

    type: int  # configs.ResourceType value; anything else is refused
    name: str

    @property
    def label(self) -> str:
        if self.type == configs.ResourceType.TOPIC:
            return f"Topic {quote(self.name)}"
        return f"Broker '{self.name}'" if self.name else "Cluster default"


@dataclass(frozen=True)
class ConfigValue:
    name: str
    value: str
    source: int  # configs.ConfigSource value
    is_default: bool
    doc: str


@dataclass(frozen=True)
class AlterOpRequest:
    name: str
    op: int  # configs.AlterOp value; anything else is refused
    value: str = ""


def _check_type(resource: Resource, field: str = "") -> configs.ResourceType:
    try:
        return configs.ResourceType(resource.type)
    except ValueError:
        raise InvalidRequestError(
            _INVALID,
            f"Unsupported resource type {resource.type}: use TOPIC or BROKER.",
            field=field,
        ) from None


def _want(resources: Sequence[Resource]) -> Want:
    """What describing or altering ``resources`` reads (names that could never be a topic are
    left out: their resources are refused by ``require_topic``)."""
    names = tuple(
        r.name
        for r in resources
        if r.type == configs.ResourceType.TOPIC and topic_name_problem(r.name) is None
    )
    return Want(
        brokers=True,
        topic_names=names,
        topic_configs=True,
        broker_configs=True,
        deletions=True,
    )


def _broker_entries(snapshot: Snapshot, resource: Resource) -> tuple[int | None, Mapping[str, str]]:
    """(broker id or None for the default, its stored entries); NOT_FOUND for unknown brokers."""
    if resource.name == "":
        return None, snapshot.cluster_configs()
    broker_id = parse_broker_id(resource.name)
    if broker_id not in snapshot.brokers and broker_id not in snapshot.broker_configs:
        raise NotFoundError(
            common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE, f"Broker {broker_id} is not registered."
        )
    return broker_id, snapshot.broker_configs_of(broker_id)


def resolve(snapshot: Snapshot, resource: Resource) -> list[ConfigValue]:
    """Every key of the resource's schema with its effective value and where it came from."""
    kind = _check_type(resource)
    if kind == configs.ResourceType.TOPIC:
        topic = require_topic(snapshot, resource.name)
        eff = configs.effective(
            kind, topic_entries=topic.configs, cluster_entries=snapshot.cluster_configs()
        )
    else:
        broker_id, entries = _broker_entries(snapshot, resource)
        if broker_id is None:
            eff = configs.effective(kind, cluster_entries=entries)
        else:
            eff = configs.effective(
                kind, broker_entries=entries, cluster_entries=snapshot.cluster_configs()
            )
    return [
        ConfigValue(c.name, c.value, int(c.source), c.is_default, c.doc)
        for c in eff.entries.values()
    ]


class DynamicConfigs:
    def __init__(self, store: AdminStore, limits: Limits) -> None:
        self.store = store
        self.ks = store.keyspace
        self.limits = limits

    async def describe(
        self, resources: Sequence[Resource]
    ) -> list[tuple[Resource, list[ConfigValue]]]:
        not_empty(resources, "No resources to describe.", "resources")
        no_duplicates(
            resources, "Describe configs request contains duplicate resources", "resources"
        )
        for i, r in enumerate(resources):
            _check_type(r, f"resources[{i}].type")
        check_topic_names(r.name for r in resources if r.type == configs.ResourceType.TOPIC)
        snapshot = await self.store.snapshot(_want(resources))
        out = []
        for resource in resources:
            with for_item(resource.label, len(resources) > 1):
                out.append((resource, resolve(snapshot, resource)))
        return out

    def _plan(
        self, snapshot: Snapshot, resource: Resource, ops: Sequence[AlterOpRequest]
    ) -> Change:
        kind = _check_type(resource)
        if not ops:
            raise InvalidRequestError(_INVALID, "No config changes given.")
        parsed = []
        for o in ops:
            try:
                op = configs.AlterOp(o.op)
            except ValueError:
                raise InvalidRequestError(
                    _INVALID, f"Unsupported config operation {o.op} for config key: {o.name}"
                ) from None
            parsed.append((o.name, op, o.value))
        extra: tuple = ()
        if kind == configs.ResourceType.TOPIC:
            topic = require_live_topic(snapshot, resource.name)
            key, current, revision = (
                self.ks.topic_config(topic.name),
                topic.configs,
                topic.config_revision,
            )
            extra = (
                cmp_mod_revision(self.ks.topic(topic.name), "=", topic.revision),
                cmp_create_revision(self.ks.delete_topic(topic.name), "=", 0),
            )
        else:
            broker_id, current = _broker_entries(snapshot, resource)
            key = self.ks.broker_config(broker_id)
            revision = snapshot.broker_configs.get(broker_id, ({}, 0))[1]
        updated = configs.apply_alter_ops(kind, current, parsed)
        value = metadata_pb2.ConfigEntries(entries=updated).SerializeToString()
        op_ = op_put(key, value) if updated else op_delete(key)
        return Change(compares=(cmp_mod_revision(key, "=", revision), *extra), ops=(op_,))

    async def alter(
        self, requests: Sequence[tuple[Resource, Sequence[AlterOpRequest]]], validate_only: bool
    ) -> list[tuple[Resource, Outcome]]:
        """Each resource with its outcome, in request order: the valid resources' operations are
        applied together (one compare-and-set transaction); a refused resource is left alone."""
        not_empty(requests, "No resources to alter.", "resources")
        resources = [r for r, _ in requests]
        no_duplicates(resources, "Alter configs request contains duplicate resources", "resources")
        for i, r in enumerate(resources):
            _check_type(r, f"resources[{i}].resource.type")

        async def attempt() -> list[tuple[Resource, Outcome]] | None:
            snapshot = await self.store.snapshot(_want(resources))
            changes = []
            outcomes = []
            with validating("AlterConfigs") as items:
                for resource, ops in requests:
                    change = items.check(partial(self._plan, snapshot, resource, ops))
                    if isinstance(change, Outcome):
                        outcomes.append((resource, change))
                    else:
                        outcomes.append((resource, OK))
                        changes.append(change)
            if validate_only or not changes:
                return outcomes
            return outcomes if await self.store.commit(changes) is not None else None

        return await optimistic(attempt, self.limits)
