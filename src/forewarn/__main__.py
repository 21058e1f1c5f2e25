"""``python -m forewarn`` is the ``forewarn`` command."""

from forewarn.script import main

main(prog_name="forewarn")
