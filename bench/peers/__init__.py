"""Other systems measured side by side with Leasehold, in the same run (``make bench-peer``)."""
