"""What the host-project adapters (``reportclient.nova``, ``reportclient.neutron``) share.

Both answer their host's callers as the host's own client would, over a
:class:`~reportclient.PlacementClient`: keystoneauth's responses and
exceptions rebuilt from the library's answers and typed errors
(:mod:`.keystoneauth`), and the host's modules imported only when a call
needs their types (:func:`host_module`). Nothing here sends a request.
"""

from reportclient._adapters.keystoneauth import (
    chain_names,
    error_body,
    host_module,
    http_error,
    keystoneauth_error,
    response_of,
)

__all__ = [
    "chain_names",
    "error_body",
    "host_module",
    "http_error",
    "keystoneauth_error",
    "response_of",
]
