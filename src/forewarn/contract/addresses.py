"""Where forewarn listens unless told otherwise.

Shared by ``forewarn serve`` and the commands that talk to it, so the ``forewarn``
command can show its defaults without loading the server.
"""

from __future__ import annotations

__all__ = ["DEFAULT_CONTROL_BIND", "DEFAULT_IMDS_BIND"]

DEFAULT_IMDS_BIND = "127.0.0.1:8169"
DEFAULT_CONTROL_BIND = "127.0.0.1:8170"
