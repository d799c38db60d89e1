"""``python -m autograder``: same as the ``autograder`` console script."""

import sys

from autograder.cli import main

sys.exit(main())
