"""``python -m forewarn.agent``: the agent's commands without the emulator's imports."""

from forewarn.agent.cli import agent

if __name__ == "__main__":  # pragma: no cover
    agent(prog_name="forewarn agent")
