"""The controller's role as one state machine, pure: standby, electing, active, suspended,
resigned. ``Controller`` owns the one ``ControllerRole``; flows read it, never write it.

    STANDBY --elected--> ELECTING --activate--> ACTIVE
    ELECTING | ACTIVE --suspend--> SUSPENDED --resume--> the phase it left
    any --resign--> RESIGNED --standby--> STANDBY   (RESIGNED stays when the process stops)

* ELECTING: we won the election and bumped ``/controller_epoch`` (``epoch``, ``epoch_revision``);
  the failover waits until the context has seen every change up to that revision.
* SUSPENDED: etcd does not confirm our lease (an outage): we keep the office and the context
  but act on nothing until the same lease is confirmed again (``role.Office``).
* ``generation`` changes on every activation and resignation: timers of an earlier term carry
  an older one and are ignored. ``campaign`` numbers the election's terms the same way for the
  events the election task puts (``Elected``, ``Suspend``, ``Resume``).

``tests/unit/controller/test_controller_role.py`` tables every transition.
"""

from __future__ import annotations

from enum import Enum


class Phase(Enum):
    STANDBY = "standby"
    ELECTING = "electing"
    ACTIVE = "active"
    SUSPENDED = "suspended"
    RESIGNED = "resigned"


class IllegalRoleTransition(Exception):
    """A transition the role's current phase does not allow (a bug in the caller)."""


class ControllerRole:
    def __init__(self) -> None:
        self.phase = Phase.STANDBY
        self.epoch = 0
        self.epoch_revision = 0
        self.generation = 0
        self.campaign = 0
        self.failover_started = 0.0  # clock reading at the epoch bump (ELECTING)
        self._suspended_from: Phase | None = None

    # ---- reading -----------------------------------------------------------------------------
    @property
    def in_office(self) -> bool:
        """Acting as the controller: ACTIVE, or SUSPENDED from ACTIVE."""
        return self._effective is Phase.ACTIVE

    @property
    def electing(self) -> bool:
        """Epoch bumped, failover not run yet (also while suspended from ELECTING)."""
        return self._effective is Phase.ELECTING

    @property
    def holds_epoch(self) -> bool:
        """In office or electing: our epoch is the cluster's."""
        return self._effective in (Phase.ACTIVE, Phase.ELECTING)

    @property
    def suspended(self) -> bool:
        return self.phase is Phase.SUSPENDED

    @property
    def pending_failover(self) -> tuple[int, float] | None:
        """(epoch revision, start) while electing."""
        return (self.epoch_revision, self.failover_started) if self.electing else None

    @property
    def _effective(self) -> Phase:
        return self._suspended_from if self.phase is Phase.SUSPENDED else self.phase  # type: ignore[return-value]

    # ---- transitions -------------------------------------------------------------------------
    def new_campaign(self) -> int:
        """The election task starts a term (or ends one): events of earlier terms are stale."""
        self.campaign += 1
        return self.campaign

    def elected(self, epoch: int, epoch_revision: int, started: float) -> None:
        self._require(Phase.STANDBY, "elected")
        self.phase = Phase.ELECTING
        self.epoch, self.epoch_revision, self.failover_started = epoch, epoch_revision, started

    def activate(self) -> float:
        """The failover runs: ELECTING -> ACTIVE (or stays SUSPENDED, now from ACTIVE).
        Returns when the failover started."""
        if self.phase is Phase.SUSPENDED and self._suspended_from is Phase.ELECTING:
            self._suspended_from = Phase.ACTIVE
        else:
            self._require(Phase.ELECTING, "activate")
            self.phase = Phase.ACTIVE
        self.generation += 1
        return self.failover_started

    def suspend(self) -> bool:
        """Our lease is not confirmed: False if there is no office to suspend (or it is)."""
        if self.phase not in (Phase.ACTIVE, Phase.ELECTING):
            return False
        self._suspended_from, self.phase = self.phase, Phase.SUSPENDED
        return True

    def resume(self) -> bool:
        """The same lease is confirmed again: False if not suspended."""
        if self.phase is not Phase.SUSPENDED:
            return False
        assert self._suspended_from is not None
        self.phase, self._suspended_from = self._suspended_from, None
        return True

    def resign(self) -> bool:
        """The term ended. True if we held (or were taking) the office."""
        held = self.holds_epoch
        self.phase, self._suspended_from = Phase.RESIGNED, None
        self.generation += 1
        return held

    def standby(self) -> None:
        """A standby context was rebuilt after a resignation."""
        self._require(Phase.RESIGNED, "standby")
        self.phase = Phase.STANDBY

    def _require(self, phase: Phase, transition: str) -> None:
        if self.phase is not phase:
            raise IllegalRoleTransition(f"{transition} in phase {self.phase.value}")
