"""The control plane: JSON API with OpenAPI, on a listener apart from the endpoint."""

from .app import ControlApp, event_out, operation_out
from .openapi import openapi_document

__all__ = ["ControlApp", "event_out", "openapi_document", "operation_out"]
