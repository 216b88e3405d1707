"""How the sidecar fails a request: the exceptions its handlers raise, shared by the server and its features."""

from __future__ import annotations

import json

from pygls.exceptions import JsonRpcException

from sunwell.errors import SunwellError
from sunwell.wire import protocol


class Unavailable(SunwellError):
    """What a request needs is not there (not initialized, unusable data dir, bad workspace); one line to show."""


class RequestFailed(JsonRpcException):
    """LSP RequestFailed (-32803): a well-formed request the sidecar cannot serve now."""

    CODE = protocol.REQUEST_FAILED


UNPARSEABLE = (json.JSONDecodeError, UnicodeDecodeError)
"""What `json.loads` raises on a body that is not JSON."""
