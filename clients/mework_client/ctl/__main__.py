"""``python -m mework_client.ctl``: the same as the ``meworkctl`` console script."""

import sys

from mework_client.ctl.main import main

sys.exit(main())
