"""Reproducible benchmarks (``make bench`` / ``python -m bench [suite ...] [--quick]``).

Every suite measures its own baseline in the same run and reports each figure next to it, so a
number is never compared with one taken on another day or another machine. See ``framework.py``
for the pieces a suite is built from and ``runner.py`` for how to register a new one.
"""
