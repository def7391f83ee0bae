"""The admin domain wired together: one object per concern, sharing one store and its limits."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from services.admin.config import Limits
from services.admin.deletion import Deletions
from services.admin.describe import Describer
from services.admin.dynamic_configs import DynamicConfigs
from services.admin.elections import Elections
from services.admin.operations import Operations
from services.admin.reassignments import Reassignments
from services.admin.store import AdminStore
from services.admin.topics import Topics


@dataclass(frozen=True)
class AdminDomain:
    topics: Topics
    deletions: Deletions
    describer: Describer
    configs: DynamicConfigs
    reassignments: Reassignments
    elections: Elections
    operations: Operations


def build_domain(
    store: AdminStore, limits: Limits, rng: Callable[[], random.Random] = random.Random
) -> AdminDomain:
    """``rng`` makes a fresh generator per placement (tests pass a seeded one)."""
    operations = Operations(store, limits)
    return AdminDomain(
        topics=Topics(store, limits, rng),
        deletions=Deletions(store, operations, limits),
        describer=Describer(store),
        configs=DynamicConfigs(store, limits),
        reassignments=Reassignments(store, operations, limits, rng),
        elections=Elections(store, operations, limits),
        operations=operations,
    )
