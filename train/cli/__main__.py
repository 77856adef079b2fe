"""``python -m train.cli``: the ``canasta`` command."""

import sys

from train.cli.main import main

sys.exit(main())
