"""The control plane: JSON API with OpenAPI, on a listener apart from the endpoint."""

from forewarn.control.app import ControlApp
from forewarn.control.json_views import event_out, operation_out
from forewarn.control.listener import ControlProtocol
from forewarn.control.openapi import openapi_document
from forewarn.control.security import parse_control_host

__all__ = [
    "ControlApp",
    "ControlProtocol",
    "event_out",
    "openapi_document",
    "operation_out",
    "parse_control_host",
]
