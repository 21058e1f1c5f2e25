"""``python -m forewarn.agent``: ``forewarn agent`` without the emulator's imports."""

import sys

if __name__ == "__main__":  # pragma: no cover
    from forewarn.vm.parser import main

    main(["agent", *sys.argv[1:]])
