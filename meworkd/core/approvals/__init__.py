"""Approvals: the decision table, PermissionRequest hooks, and asking a person."""
