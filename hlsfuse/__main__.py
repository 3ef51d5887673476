"""``python -m hlsfuse``: the same as the ``hlsfuse`` command."""

from .cli import main

raise SystemExit(main())
