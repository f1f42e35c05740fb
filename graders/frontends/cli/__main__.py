"""python -m graders.frontends.cli: the ``kata`` command."""

import sys

from graders.frontends.cli import main

sys.exit(main())
