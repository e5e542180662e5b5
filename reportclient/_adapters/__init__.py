"""What the host-project adapters (``reportclient.nova``, ``reportclient.neutron``) share.

Both answer their host's callers as the host's own client would, over a
:class:`~reportclient.PlacementClient`: keystoneauth's responses and
exceptions rebuilt from the library's answers and typed errors
(:mod:`.keystoneauth`), and the host's modules imported only when a call
needs their types (:func:`.keystoneauth.host_module`). Nothing here sends a request.
"""
