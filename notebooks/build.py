"""Build every kata's notebook from the kata's own sources (the builder itself is
graders/tools/notebooks.py; this file keeps the command).

    python notebooks/build.py           # (re)write every kata's notebook, in every language
    python notebooks/build.py --check   # exit 1, listing the notebooks that differ
    python notebooks/build.py 03        # only kata 03's notebooks
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this copy's graders first

from graders.tools.notebooks import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
