"""The RPC methods, one module per group, each a thin adapter from params to core calls.

Handlers are module functions taking ``(services, connection, params)``, collected in each
module's ``group``; :func:`meworkd.rpc.api.build_table` binds them all to the daemon's
:class:`~meworkd.rpc.services.Services`. Groups do not import each other. Method names, params
and results are the contract of docs/api.md.
"""
