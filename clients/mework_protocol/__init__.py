"""The wire contract shared by meworkd and its clients: codes, levels, topics, the socket
address, how a form field reads.

A top-level package, not ``meworkd.protocol``: ``meworkctl`` must start without loading any
module of the daemon package (tests/test_ctl.py), and a client install needs none of it.
"""
