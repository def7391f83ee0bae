"""A standby keeps a channel to every registered broker (``ChannelsOfTheTerm.keep_ready``),
following the brokers that come and go, sending nothing on them; the term it wins starts on
those same channels, and a resignation closes them and opens new ones for the next standby
spell."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.controller_micro import BROKERS, RecordingChannels, failover, standby
from services.controller import events as ev
from services.controller.core import BrokerInfo
from services.controller.statelog import StateChangeLog


class _Counted(RecordingChannels):
    """Recording channels that note every manager made and every broker asked to connect."""

    made: list[_Counted] = []

    def __init__(self) -> None:
        super().__init__()
        self.connected: list[int] = []
        self.closed = False
        _Counted.made.append(self)

    def _connect_ahead(self, broker) -> None:
        self.connected.append(broker.info.id)

    async def close(self) -> None:
        self.closed = True
        await super().close()


async def test_a_standby_keeps_channels_to_the_brokers_and_its_term_starts_on_them() -> None:
    _Counted.made = []
    with tempfile.TemporaryDirectory() as tmp:
        statelog = StateChangeLog(str(Path(tmp) / "sc.log"), controller_id=1)
        c = await standby(6, 1, statelog, _Counted)
        assert c.channels is None, "out of office: no term's channels"
        [ready] = _Counted.made
        assert ready.broker_ids == set(BROKERS) and ready.held
        assert sorted(ready.connected) == sorted(BROKERS)
        assert ready.bytes == 0, "nothing is sent on a standby's channels"

        gone = BROKERS[-1]
        await c.handle(ev.BrokerChange((), (gone,)))
        assert ready.broker_ids == set(BROKERS) - {gone}
        moved = BrokerInfo(BROKERS[0], "10.0.0.9", 9000 + BROKERS[0], epoch=10 + BROKERS[0])
        before = ready._brokers[BROKERS[0]]
        await c.handle(ev.BrokerChange((moved,), ()))
        assert ready._brokers[BROKERS[0]] is not before, "a new endpoint, a new channel"
        assert ready.bytes == 0

        await failover(c)
        assert c.channels is ready and len(_Counted.made) == 1, "the term adopted them"
        assert not ready.held and ready.bytes > 0

        await c.deactivate("a test resigns")
        assert ready.closed and c.channels is None
        assert len(_Counted.made) == 2, "the next standby spell has channels of its own"
        again = _Counted.made[-1]
        assert again.broker_ids == set(c.ctx.brokers) and again.held and again.bytes == 0
        await c.delivery.close()
        assert again.closed
        statelog.close()


async def test_an_active_controller_opens_no_standby_channels() -> None:
    _Counted.made = []
    with tempfile.TemporaryDirectory() as tmp:
        statelog = StateChangeLog(str(Path(tmp) / "sc.log"), controller_id=1)
        c = await standby(3, 1, statelog, _Counted)
        await failover(c)
        await c.handle(ev.BrokerChange((BrokerInfo(9, "127.0.0.1", 9009, epoch=19),), ()))
        assert len(_Counted.made) == 1 and 9 in _Counted.made[0].broker_ids
        await c.delivery.close()
        statelog.close()
