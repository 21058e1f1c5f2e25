"""Azure Resource Graph's ``POST /providers/Microsoft.ResourceGraph/resources`` over the
``maintenanceresources`` rows of published scheduled events (a KQL subset, no eval)."""

from forewarn.arm.resourcegraph.route import GRAPH_VERSIONS, QueryError, answer_query

__all__ = ["GRAPH_VERSIONS", "QueryError", "answer_query"]
