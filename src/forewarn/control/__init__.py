"""The control plane: JSON API with OpenAPI, on a listener apart from the endpoint."""

from .app import ControlApp
from .openapi import openapi_document
from .security import parse_control_host
from .views import event_out, operation_out

__all__ = ["ControlApp", "event_out", "openapi_document", "operation_out", "parse_control_host"]
