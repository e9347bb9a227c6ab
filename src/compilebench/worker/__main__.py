"""`python -m compilebench.worker`: one request, read from stdin, answered by the worker."""

import sys

from .entry import main

sys.exit(main())
