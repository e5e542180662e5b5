"""nova's raw requests answered as keystoneauth answers nova: a ``requests.Response``.

nova's ``SchedulerReportClient.get``/``put``/``post``/``delete`` hand back
keystoneauth's response whatever its status (``raise_exc=False``), and
nova's callers (nova-manage's heal and audit among them) read its
``status_code``, ``json()``, ``text`` and headers. The adapter sends those
requests through the client's gateway, where every answer of 400 or more is
a typed error; this rebuilds the response nova would have had from the
answer or the error: the status, Placement's error document
(``{"errors": [{"status", "title", "detail", "code", "request_id"}]}``, as
Placement words it from microversion 1.23) and the request id header.
"""

from __future__ import annotations

# Shared with the neutron adapter: the rebuild lives below both.
from reportclient._adapters.keystoneauth import REQUEST_ID_HEADER, error_body, response_of

__all__ = ["REQUEST_ID_HEADER", "error_body", "response_of"]
