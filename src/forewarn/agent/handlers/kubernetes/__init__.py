"""The ``kubernetes`` handler: this VM as a Kubernetes node, through kubectl.

``handler.py`` takes the node out of service and back; ``nodename.py`` finds the node's
name; ``objects.py`` builds what is written about it (Events, the node condition);
``kubectl.py`` runs kubectl.
"""

from forewarn.agent.handlers.kubernetes.handler import KubernetesHandler

__all__ = ["KubernetesHandler"]
