"""What the coordinated end-to-end tests share: the two backends, and one agent's config
for a group whose handler runs ``handler`` and whose approval is coordinated."""

from __future__ import annotations

from tests.agent.conftest import Fleet

BACKENDS = {
    "redis": "redis://127.0.0.1:6379/0",
    "postgres": "postgresql://postgres@127.0.0.1:5432/postgres",
}


def coordinated_config(
    fleet: Fleet, vm: str, backend: str, namespace: str, handler: str, *, claim_lease: float = 0
) -> str:
    """An agent of ``vm`` voting in ``namespace`` of ``backend`` (``claim_lease`` > 0: the
    approval claim's lease, in seconds)."""
    lease = f"claim_lease = {claim_lease:g}" if claim_lease else ""
    return f"""
        local_address = "{fleet.address[vm]}"
        poll_interval = 0.2
        safety_margin = 1

        [coordination]
        backend = "{backend}"
        url = "{BACKENDS[backend]}"
        namespace = "{namespace}"
        {lease}

        [handlers.prep]
        type = "exec"
        argv = {handler}

        [[rules]]
        name = "group"
        event_types = ["Reboot"]
        this_vm = true
        handlers = ["prep"]
        approval = "coordinated"
    """
