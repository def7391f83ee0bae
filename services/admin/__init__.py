"""The admin service: the public management API (topics, configs, reassignments, elections)."""
