"""``python -m toolcap``: the same as the ``toolcap`` command."""

import sys

from .cli import main

sys.exit(main())
