"""The composition root: command line, the Daemon that builds and owns everything, its paths."""
