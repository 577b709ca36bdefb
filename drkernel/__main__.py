"""`python -m drkernel` runs the `drkernel` command."""

import sys

from drkernel.cli import main

sys.exit(main())
