"""``python -m sparsedp.cli``."""

import sys

from sparsedp.cli.main import main

sys.exit(main())
