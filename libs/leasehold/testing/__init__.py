"""Helpers for running real Leasehold pieces locally: tests, benchmarks and ``make run``."""
