"""Give the memory start-up freed back to the system, once (glibc's ``malloc_trim``).

Start-up allocates and frees a lot: each module's ``.pyc`` read whole before it is
unmarshalled, the TOML file and its dicts, msgspec's conversions, the first answers.
glibc keeps what was freed for later ``malloc`` calls, counted in the agent's resident
memory, and an idle agent never asks for it again. ``malloc_trim(0)`` hands every whole
free page back (inside the heap too, since glibc 2.8, not only at its top): ~0.3 MB of
an idle agent, net of ctypes, which it loads. Elsewhere (musl, macOS) there is no such
call and nothing is done. ``gc.freeze()`` would save nothing here: it only spares the
pages a forked child shares, and the agent does not fork Python.
"""

from __future__ import annotations

__all__ = ["trim"]


def trim() -> bool:
    """Return freed heap pages to the system; False where the C library cannot."""
    try:
        import ctypes

        malloc_trim = ctypes.CDLL(None).malloc_trim
    except (ImportError, OSError, AttributeError):
        return False
    malloc_trim.argtypes = [ctypes.c_size_t]
    malloc_trim.restype = ctypes.c_int
    malloc_trim(0)
    return True
