"""Building a client the way OpenStack services and tools configure Placement.

Three sources, all through keystoneauth1's own loaders so that every option
means what it means in nova, neutron or the ``openstack`` CLI:

* an oslo.config group (``[placement]`` in a service's configuration file):
  :func:`client_from_conf`, with :func:`register_opts` and :func:`list_opts`
  for oslo-config-generator;
* a ``clouds.yaml`` cloud or an openstacksdk ``Connection``:
  :func:`client_from_cloud`;
* ``OS_*`` environment variables: :func:`client_from_env`.

oslo.config and openstacksdk are optional (the ``oslo`` and ``sdk``
extras) and imported only by the functions that need them; without them
those functions raise :class:`MissingExtra`.

Timeouts: an explicit ``timeout=`` wins; else the source's timeout applies
to connect and read alike; else reportclient's default. The keystoneauth
Session gets the longest of them too, since that is what bounds version
discovery. ``connect_retries`` and ``status_code_retries`` stay on the
Adapter and apply to reads only: the transport turns them off for writes.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

from reportclient._clients.placement import PlacementClient
from reportclient._wire.transport import (
    DEFAULT_POOL_SIZE,
    DEFAULT_TIMEOUT,
    size_pool,
    validate_timeout,
)
from reportclient.errors import PlacementAuthError

if TYPE_CHECKING:
    from oslo_config import cfg

__all__ = [
    "DEFAULT_GROUP",
    "MissingExtra",
    "client_from_cloud",
    "client_from_conf",
    "client_from_env",
    "list_opts",
    "register_opts",
]

#: The group services read Placement's options from.
DEFAULT_GROUP = "placement"
_SERVICE_TYPE = "placement"
# nova's default: services talk to Placement on the internal network first.
_VALID_INTERFACES = ["internal", "public"]
# The auth plugin whose options oslo-config-generator documents; others are
# registered when ``auth_type`` names them.
_SAMPLE_AUTH_TYPE = "password"


class MissingExtra(ImportError):
    """An optional dependency of :mod:`reportclient.config` is not installed.

    ``extra`` names the reportclient extra that installs it.
    """

    def __init__(self, module: str, extra: str, needed_by: str) -> None:
        super().__init__(
            f"{needed_by} needs {module}, which is not installed: "
            f"pip install 'reportclient[{extra}]'",
            name=module,
        )
        self.extra = extra


def _require(module: str, extra: str, needed_by: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(module.partition(".")[0], extra, needed_by) from exc


def _timeouts(own: Any, client_kwargs: dict[str, Any]) -> float:
    """Settle the client's timeout in ``client_kwargs``; return the Session's."""
    if "timeout" not in client_kwargs:
        client_kwargs["timeout"] = DEFAULT_TIMEOUT if own is None else own
    return max(validate_timeout(client_kwargs["timeout"]))


def _adapter_opts() -> list[cfg.Opt]:
    opts: list[cfg.Opt] = ks_loading.get_adapter_conf_options(include_deprecated=False)
    for opt in opts:
        if opt.dest == "service_type":
            opt.default = _SERVICE_TYPE
        elif opt.dest == "valid_interfaces":
            opt.default = list(_VALID_INTERFACES)
    return opts


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """The ``[placement]`` options, for oslo-config-generator.

    Registered as the ``reportclient`` namespace of the ``oslo.config.opts``
    entry point: session options (TLS, ``timeout``), ``auth_type`` and
    ``auth_section`` with the ``password`` plugin's options, and adapter
    options (``region_name``, ``valid_interfaces``, ``endpoint_override``,
    ``connect_retries``, ``status_code_retries``...).

    :raises MissingExtra: without oslo.config.
    """
    _require("oslo_config.cfg", "oslo", "reportclient.config.list_opts")
    seen: set[str] = set()
    opts: list[cfg.Opt] = []
    for opt in (
        ks_loading.get_session_conf_options()
        + ks_loading.get_auth_common_conf_options()
        + ks_loading.get_auth_plugin_conf_options(_SAMPLE_AUTH_TYPE)
        + _adapter_opts()
    ):
        if opt.dest not in seen:
            seen.add(opt.dest)
            opts.append(opt)
    return [(DEFAULT_GROUP, opts)]


def register_opts(conf: cfg.ConfigOpts, group: str = DEFAULT_GROUP) -> None:
    """Register the session, auth and adapter options on ``conf[group]``.

    Safe to call again, and alongside a service that registered the same
    keystoneauth options itself.

    :raises MissingExtra: without oslo.config.
    """
    _register(conf, group, "reportclient.config.register_opts")


def _register(conf: cfg.ConfigOpts, group: str, needed_by: str) -> None:
    _require("oslo_config.cfg", "oslo", needed_by)
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)
    ks_loading.register_adapter_conf_options(conf, group, include_deprecated=False)
    conf.set_default("service_type", _SERVICE_TYPE, group=group)
    conf.set_default("valid_interfaces", list(_VALID_INTERFACES), group=group)


def client_from_conf(
    conf: cfg.ConfigOpts,
    group: str = DEFAULT_GROUP,
    *,
    pool_size: int = DEFAULT_POOL_SIZE,
    **client_kwargs: Any,
) -> PlacementClient:
    """A client configured by an oslo.config group, as nova configures ``[placement]``.

    Registers the options (:func:`register_opts`), then loads the auth
    plugin named by ``auth_type``, the Session and the Adapter with
    keystoneauth1's loaders. ``client_kwargs`` go to
    :class:`~reportclient.PlacementClient` (``retry``, ``cache_ttl``,
    ``microversion``, ``timeout``...).

    :param pool_size: connections kept to Placement.
    :raises MissingExtra: without oslo.config.
    :raises PlacementAuthError: ``auth_type`` names no plugin, or the
        plugin's required options are missing.
    """
    _register(conf, group, "reportclient.config.client_from_conf")
    try:
        auth = ks_loading.load_auth_from_conf_options(conf, group)
    except ks_exc.ClientException as exc:
        raise PlacementAuthError(f"[{group}] auth options: {exc}") from exc
    session_timeout = _timeouts(conf[group].timeout, client_kwargs)
    session = ks_loading.load_session_from_conf_options(
        conf, group, auth=auth, timeout=session_timeout
    )
    size_pool(session.session, pool_size)
    adapter = ks_loading.load_adapter_from_conf_options(conf, group, session=session, auth=auth)
    return PlacementClient(adapter, **client_kwargs)


def client_from_cloud(
    cloud: str | None = None,
    *,
    connection: Any = None,
    **client_kwargs: Any,
) -> PlacementClient:
    """A client for a ``clouds.yaml`` cloud, through openstacksdk.

    ``connection.placement`` is already a keystoneauth1 Adapter for
    Placement (region, interface, endpoint override and TLS as the cloud
    says), so the client is built on it and shares the Connection's
    Session. Without ``connection``, ``openstack.connect(cloud=cloud)``
    reads ``clouds.yaml`` (``OS_CLIENT_CONFIG_FILE`` to point elsewhere) or,
    with no cloud named, ``OS_CLOUD`` and ``OS_*`` variables.

    :raises MissingExtra: without openstacksdk, when no connection is given.
    :raises PlacementAuthError: keystoneauth1 refused the cloud's auth
        options (openstacksdk raises its own errors for a cloud it cannot read).
    """
    if connection is None:
        openstack = _require("openstack", "sdk", "reportclient.config.client_from_cloud")
        try:
            connection = openstack.connect(cloud=cloud)
        except ks_exc.ClientException as exc:
            raise PlacementAuthError(f"cloud {cloud!r}: {exc}") from exc
    adapter: ks_adapter.Adapter = connection.placement
    return PlacementClient(adapter, **client_kwargs)


def client_from_env(*, pool_size: int = DEFAULT_POOL_SIZE, **client_kwargs: Any) -> PlacementClient:
    """A client configured by ``OS_*`` environment variables, as the ``openstack`` CLI reads them.

    keystoneauth1's own argparse loaders read the variables: ``OS_AUTH_TYPE``
    (default ``password``) and the plugin's options (``OS_AUTH_URL``,
    ``OS_USERNAME``, ``OS_PASSWORD``, ``OS_PROJECT_NAME``,
    ``OS_USER_DOMAIN_NAME``..., or ``OS_ENDPOINT`` and ``OS_TOKEN`` for
    ``admin_token``), ``OS_CACERT``/``OS_CERT``/``OS_KEY``,
    ``OS_REGION_NAME``, ``OS_INTERFACE`` or ``OS_PLACEMENT_INTERFACE``,
    ``OS_PLACEMENT_ENDPOINT_OVERRIDE``, and ``OS_PLACEMENT_API_VERSION``
    (pins the microversion, as osc-placement does).

    :raises PlacementAuthError: the auth type is unknown or its required
        options are missing.
    """
    parser = argparse.ArgumentParser(add_help=False)
    ks_loading.register_session_argparse_arguments(parser)
    ks_adapter.register_adapter_argparse_arguments(parser, service_type=_SERVICE_TYPE)
    ks_adapter.register_service_adapter_argparse_arguments(parser, _SERVICE_TYPE)
    try:
        ks_loading.register_auth_argparse_arguments(parser, [], default=_SAMPLE_AUTH_TYPE)
        args = parser.parse_args([])
        auth = ks_loading.load_auth_from_argparse_arguments(args)
    except ks_exc.ClientException as exc:
        raise PlacementAuthError(f"OS_* auth variables: {exc}") from exc
    # argparse's own default (600 s) is no timeout the caller chose.
    session_timeout = _timeouts(None, client_kwargs)
    session = ks_loading.load_session_from_argparse_arguments(
        args, auth=auth, timeout=session_timeout
    )
    if args.os_placement_api_version:
        client_kwargs.setdefault("microversion", args.os_placement_api_version)
    return PlacementClient.from_session(
        session,
        pool_size=pool_size,
        # The generic OS_SERVICE_TYPE and OS_ENDPOINT_OVERRIDE name some other
        # service as often as Placement; only the OS_PLACEMENT_* ones are read.
        service_type=args.os_placement_service_type or _SERVICE_TYPE,
        interface=args.os_placement_interface or args.os_interface,
        region_name=args.os_region_name,
        endpoint_override=args.os_placement_endpoint_override,
        **client_kwargs,
    )
