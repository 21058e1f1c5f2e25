"""``python -m forewarn`` is the ``forewarn`` command."""

from .cli import main

main(prog_name="forewarn")
