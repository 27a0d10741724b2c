"""What the backends share as plain functions and small classes.

Checking and folding events, keys and cursors, paging, the outage log, history trimming, and
the parts of ``create``, ``list`` and ``read_events`` every backend does the same way.
"""
