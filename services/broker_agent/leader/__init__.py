"""The leader's side of the fetch path: serving Fetch to followers and consumers
(``fetch``), incremental fetch sessions (``fetch_session``, KIP-227), and the offsets a leader
answers (``leader_offsets``: ListOffsets, OffsetsForLeaderEpoch)."""
