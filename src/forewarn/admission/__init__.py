"""Who gets a connection on the API listeners (the control API and ARM), and how much of
the process's open-file table each listener may take, so that no listener can starve the
metadata endpoint's VMs."""

from forewarn.admission.budget import Budget
from forewarn.admission.guard import Gate, GuardedProtocol, guarded
from forewarn.admission.pool import Pool

__all__ = ["Budget", "Gate", "GuardedProtocol", "Pool", "guarded"]
