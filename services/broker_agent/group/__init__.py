"""The group coordinator (Kafka's new group coordinator, KIP-848) hosted by every broker agent.

A group's coordinator is the leader of one partition of ``__consumer_offsets``; the group state
and the committed offsets live in that partition's records (``records``) and in memory, in one
``shard`` per partition led here, rebuilt from the log when leadership arrives. Decisions are
pure functions returning records (``heartbeat``, ``offsets``, with ``assignors`` and the member
state machine in ``reconcile``); a shard appends the records with acks=all, replays them into
its state and answers once they are committed.
"""
