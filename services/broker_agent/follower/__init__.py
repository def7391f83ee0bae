"""The follower's side of the fetch path: the fetcher manager and its fetcher tasks
(``fetcher_manager``, ``fetcher``: truncation by leader epoch, then fetching), each partition's
fetch state (``fetch_state``, ``fetch_specs``), and the client for one leader broker
(``leader_endpoint``, with the follower's fetch session)."""
