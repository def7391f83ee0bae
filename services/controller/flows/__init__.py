"""The controller's flows (seed 000 §6-10, seed 002, seed 003), one module each.

Each flow is given a ``FlowContext`` (``context``): it reads and changes the controller's context
only through decisions of the core and the decide-commit-apply pipeline (``execute``), and
queues requests; how they reach the brokers is the delivery's business.
"""

from __future__ import annotations

from services.controller import events as ev
from services.controller.flows.alter_partition import AlterPartitionFlow
from services.controller.flows.brokers import BrokerFlows
from services.controller.flows.context import FlowContext, Host
from services.controller.flows.deletion import TopicDeletionManager
from services.controller.flows.elections import ElectionFlows
from services.controller.flows.failover import Failover
from services.controller.flows.reassignment import ReassignmentManager
from services.controller.flows.shutdown import ControlledShutdownFlow
from services.controller.flows.topics import TopicFlows
from services.controller.view import apply_warm


class Flows:
    def __init__(self, host: Host) -> None:
        c = FlowContext(host)
        c.flows = self
        self.c = c
        self.failover = Failover(c)
        self.brokers = BrokerFlows(c)
        self.topics = TopicFlows(c)
        self.deletion = TopicDeletionManager(c)
        self.reassignment = ReassignmentManager(c)
        self.elections = ElectionFlows(c)
        self.shutdown = ControlledShutdownFlow(c)
        self.alter_partition = AlterPartitionFlow(c)

    async def on_metadata(self, event: ev.ControllerEvent) -> None:
        """An etcd change while active (the view is already updated)."""
        if isinstance(event, ev.BrokerChange):
            await self.brokers.on_broker_change(event)
        elif isinstance(event, ev.TopicChange):
            await self.topics.on_topic_change(event)
        elif isinstance(event, ev.PartitionStateChange):
            self.topics.on_partition_state_change(event)
        elif isinstance(event, ev.ConfigChange):
            apply_warm(self.c.ctx, self.c.view, event)  # configs only reach the context
        elif isinstance(event, ev.TopicDeletion):
            await self.deletion.on_intents(event)
        elif isinstance(event, ev.ReassignmentRequest):
            await self.reassignment.on_intents(event)
        elif isinstance(event, ev.ElectionRequest):
            await self.elections.on_intents(event)

    def stop(self) -> None:
        """Resignation: timers and schedulers of the finished term stop."""
        self.elections.stop()
        self.topics.stop()
        self.deletion.stop()
        self.failover.stop_heartbeat()
