"""The VM's commands: ``forewarn watch``, ``discover``, ``events --url``, ``approve
--url``, ``conformance`` and ``agent ...``, on the standard library.

``parser`` is each command's one argparse parser (``forewarn.script`` hands it the VM's
command lines); ``endpoint`` what the endpoint's commands do (the agent's are
``forewarn.agent.commands``, the kit's ``forewarn.conformance.command``); ``table`` and
``text`` print what fits the output's width; ``exits`` ends a command in error. The
emulator's CLI prints and fails with the same ``table`` and ``exits``.
"""

__all__: list[str] = []
