"""Commands for people on a VM (``forewarn watch``, ``discover``, ``events/approve --url``)."""

from __future__ import annotations

__all__: list[str] = []
