"""``python -m forewarn`` is the ``forewarn`` command."""

from forewarn.cli import main

main(prog_name="forewarn")
