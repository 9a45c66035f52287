"""Running under pytest-xdist: the scheduler, unit durations, threads per worker, GPU sharing.

May import: ``containment/``, ``model/devices``, ``spec/``; the items import it, never
the other way.
"""
