"""Where the daemon's control socket lives by default: kept for importers of this name."""

from mework_protocol.address import default_socket_path

__all__ = ["default_socket_path"]
