"""``python -m symuat.cli``: the ``symuat`` command."""

from . import run

run()
