"""``python -m meworkd`` and the ``meworkd`` console script: see :mod:`meworkd.app.main`."""

from meworkd.app.main import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
