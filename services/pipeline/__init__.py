"""Leasehold's data pipeline on Spark: snapshots, reassignment plans, state-change analytics.

Modules are split so that the pure parts (goal arithmetic, greedy move selection, snapshot
conversion, offset planning, state-change interval logic) import neither Spark nor gRPC and are
unit-tested directly; the Spark and I/O modules only wire those parts to DataFrames, etcd and the
brokers.
"""
