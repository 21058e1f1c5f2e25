"""``python -m forewarn.agent``: the agent's commands without the emulator's imports
(``run`` and ``status`` without click either: ``forewarn.fastpath``)."""

import sys

if __name__ == "__main__":  # pragma: no cover
    from forewarn.fastpath import run

    if not run(["agent", *sys.argv[1:]]):
        from forewarn.agent.cli import agent

        agent(prog_name="forewarn agent")
