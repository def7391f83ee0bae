"""The ``leasehold`` command line; the entry point is :func:`leasehold.cli.main.main`."""
