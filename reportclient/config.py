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

A good neighbour in ``[placement]``: nova, cyborg and neutron register
options of their own there, some under the names keystoneauth uses
(neutron's ``region_name``), some with other defaults (nova's and cyborg's
adapter options), some as placeholders (their ``version``). Registering
keystoneauth's definitions over theirs would raise ``DuplicateOptError`` in
the service, so each option is registered only where the name is free; an
option already there is read as it is when its type is the same, and left
alone otherwise (reportclient's own option then keeps its default). The
definitions a service registers *after* reportclient are its business:
call :func:`register_opts` (or :func:`client_from_conf`) once the service
has registered its own. neutron's and cyborg's ``endpoint_type`` is honoured
as ``valid_interfaces`` when it is set and ``valid_interfaces`` is not.

Timeouts: an explicit ``timeout=`` wins; else ``connect_timeout`` and
``read_timeout`` (oslo.config), else the source's ``timeout`` applies to
connect and read alike; else reportclient's default. The keystoneauth
Session gets the longest of them too, since that is what bounds version
discovery. ``connect_retries`` and ``status_code_retries`` stay on the
Adapter and apply to reads only: the transport turns them off for writes.

Every configuration error is raised while the client is built, before any
request: no auth plugin (:class:`~reportclient.PlacementAuthError`), or a
value keystoneauth or reportclient cannot use (:class:`~reportclient.InvalidInput`).
"""

from __future__ import annotations

import argparse
import logging
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session

from reportclient._clients.core import ClientSettings, SessionOptions, check_settings
from reportclient._clients.placement import PlacementClient
from reportclient._compat import Unpack
from reportclient._config_opts import (
    DEFAULT_GROUP,
    SAMPLE_AUTH_TYPE,
    SERVICE_TYPE,
    MissingExtra,
    interfaces_of,
    list_opts,
    own_settings,
    read_opt,
    register,
    register_opts,
    require,
)
from reportclient._wire.transport import (
    DEFAULT_POOL_SIZE,
    DEFAULT_TIMEOUT,
    size_pool,
    validate_timeout,
)
from reportclient.errors import InvalidInput, PlacementAuthError
from reportclient.retry import RetryBudget, default_retry

if TYPE_CHECKING:
    from keystoneauth1 import plugin as ks_plugin
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

LOG = logging.getLogger("reportclient.config")

#: Seconds per request: one number for both, or (connect, read).
Timeout = float | tuple[float, float]


def _load_auth(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str) -> ks_plugin.BaseAuthPlugin:
    """The auth plugin ``conf[group]`` configures.

    :raises PlacementAuthError: none is configured, ``auth_type`` names no
        plugin, or the plugin's required options are missing.
    """
    try:
        auth = ks_loading.load_auth_from_conf_options(conf, group)
    except ks_exc.ClientException as exc:
        raise PlacementAuthError(f"[{group}] auth options: {exc}") from exc
    except oslo_cfg.Error as exc:  # an auth_section naming a group with no auth options
        raise PlacementAuthError(f"[{group}] auth options: {exc}") from exc
    if auth is None:
        section = conf[group].auth_section or group
        raise PlacementAuthError(
            f"[{section}] configures no authentication (auth_type is not set): set auth_type "
            "(password, v3applicationcredential, admin_token...) and that plugin's options, "
            "for password auth_url, username, password, project_name, user_domain_name and "
            "project_domain_name"
        )
    return auth


def _timeout(own: dict[str, Any], session_timeout: float | None) -> tuple[float, float]:
    """(connect, read) from ``connect_timeout``/``read_timeout``, else ``timeout``, else default."""
    connect, read = own["connect_timeout"], own["read_timeout"]
    fallback = (session_timeout, session_timeout) if session_timeout else DEFAULT_TIMEOUT
    return validate_timeout(
        (fallback[0] if connect is None else connect, fallback[1] if read is None else read)
    )


def client_from_conf(
    conf: cfg.ConfigOpts,
    group: str = DEFAULT_GROUP,
    *,
    pool_size: int | None = None,
    **overrides: Unpack[ClientSettings],
) -> PlacementClient:
    """A client configured by an oslo.config group, as nova configures ``[placement]``.

    Registers the options (:func:`register_opts`), then loads the auth
    plugin named by ``auth_type``, the Session and the Adapter with
    keystoneauth1's loaders. Every keyword argument (those of
    :class:`~reportclient.ClientSettings`, plus ``pool_size``) wins over its
    option; None, or leaving it out, means "as the group says".

    :param retry: a policy; without one, ``retry_attempts``,
        ``retry_deadline``, ``retry_backoff_base`` and ``retry_backoff_cap``
        shape :func:`~reportclient.default_retry`.
    :param retry_budget: a budget; without one, ``retry_budget_ratio`` and
        ``retry_budget_floor`` shape the client's :class:`~reportclient.RetryBudget`.
    :raises MissingExtra: without oslo.config.
    :raises PlacementAuthError: no ``auth_type``, one that names no plugin,
        or the plugin's required options are missing.
    :raises InvalidInput: an option holds a value that cannot be used (an
        unknown interface, a negative ``cache_ttl``, a microversion out of range).
    """
    check_settings(overrides, "client_from_conf")
    oslo_cfg = register(conf, group, "reportclient.config.client_from_conf")
    own = own_settings(oslo_cfg, conf, group)
    interfaces = interfaces_of(oslo_cfg, conf, group)
    auth = _load_auth(oslo_cfg, conf, group)
    timeout = overrides.get("timeout")
    pair = (
        validate_timeout(timeout)
        if timeout is not None
        else _timeout(own, read_opt(oslo_cfg, conf, group, "timeout"))
    )
    try:
        session = ks_loading.load_session_from_conf_options(
            conf, group, auth=auth, timeout=max(pair)
        )
    except (TypeError, ValueError, oslo_cfg.Error) as exc:
        raise InvalidInput(f"[{group}] session options: {exc}") from exc
    size_pool(session.session, own["pool_size"] if pool_size is None else pool_size)

    def given_or_own(name: str) -> Any:
        value = overrides.get(name)
        return own[name] if value is None else value

    settings: ClientSettings = {
        **overrides,
        "retry": overrides.get("retry")
        or default_retry(
            attempts=own["retry_attempts"],
            deadline=own["retry_deadline"],
            base=own["retry_backoff_base"],
            cap=own["retry_backoff_cap"],
        ),
        "cache_size": given_or_own("cache_size"),
        "cache_ttl": given_or_own("cache_ttl"),
        "microversion": given_or_own("microversion"),
        "timeout": pair,
        "reconcile_max_staleness": given_or_own("reconcile_max_staleness"),
        "proof_assumptions": given_or_own("proof_assumptions"),
        "retry_budget": overrides.get("retry_budget")
        or RetryBudget(
            own["retry_budget_ratio"],
            own["retry_budget_floor"],
            clock=overrides.get("clock", time.monotonic),
        ),
    }
    return PlacementClient(
        _load_adapter(oslo_cfg, conf, group, session, auth, interfaces), **settings
    )


def _load_adapter(
    oslo_cfg: ModuleType,
    conf: cfg.ConfigOpts,
    group: str,
    session: ks_session.Session,
    auth: ks_plugin.BaseAuthPlugin,
    interfaces: list[str] | None,
) -> ks_adapter.Adapter:
    overrides: dict[str, Any] = {}
    if interfaces is not None:
        overrides["interface"] = interfaces
    if not read_opt(oslo_cfg, conf, group, "service_type"):
        overrides["service_type"] = SERVICE_TYPE  # a service registered it without a default
    try:
        adapter: ks_adapter.Adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth, **overrides
        )
    except (TypeError, ValueError, oslo_cfg.Error) as exc:
        # keystoneauth's TypeError: exclusive options set together (version
        # and min_version, interface and valid_interfaces).
        raise InvalidInput(f"[{group}] adapter options: {exc}") from exc
    return adapter


def client_from_cloud(
    cloud: str | None = None,
    *,
    connection: Any = None,
    **settings: Unpack[ClientSettings],
) -> PlacementClient:
    """A client for a ``clouds.yaml`` cloud, through openstacksdk.

    ``connection.placement`` is already a keystoneauth1 Adapter for
    Placement (region, interface, endpoint override and TLS as the cloud
    says), so the client is built on it and shares the Connection's
    Session. Without ``connection``, ``openstack.connect(cloud=cloud)``
    reads ``clouds.yaml`` (``OS_CLIENT_CONFIG_FILE`` to point elsewhere) or,
    with no cloud named, ``OS_CLOUD`` and ``OS_*`` variables. The other
    keyword arguments are :class:`~reportclient.ClientSettings`.

    :raises MissingExtra: without openstacksdk, when no connection is given.
    :raises PlacementAuthError: keystoneauth1 refused the cloud's auth
        options (openstacksdk raises its own errors for a cloud it cannot read).
    """
    check_settings(settings, "client_from_cloud")
    if connection is None:
        openstack = require("openstack", "sdk", "reportclient.config.client_from_cloud")
        try:
            connection = openstack.connect(cloud=cloud)
        except ks_exc.ClientException as exc:
            raise PlacementAuthError(f"cloud {cloud!r}: {exc}") from exc
    adapter: ks_adapter.Adapter = connection.placement
    return PlacementClient(adapter, **settings)


def client_from_env(
    *,
    pool_size: int = DEFAULT_POOL_SIZE,
    **settings: Unpack[ClientSettings],
) -> PlacementClient:
    """A client configured by ``OS_*`` environment variables, as the ``openstack`` CLI reads them.

    keystoneauth1's own argparse loaders read the variables: ``OS_AUTH_TYPE``
    (default ``password``) and the plugin's options (``OS_AUTH_URL``,
    ``OS_USERNAME``, ``OS_PASSWORD``, ``OS_PROJECT_NAME``,
    ``OS_USER_DOMAIN_NAME``..., or ``OS_ENDPOINT`` and ``OS_TOKEN`` for
    ``admin_token``), ``OS_CACERT``/``OS_CERT``/``OS_KEY``,
    ``OS_REGION_NAME``, ``OS_INTERFACE`` or ``OS_PLACEMENT_INTERFACE``,
    ``OS_PLACEMENT_ENDPOINT_OVERRIDE``, and ``OS_PLACEMENT_API_VERSION``
    (pins the microversion, as osc-placement does, unless ``microversion``
    is given). The other keyword arguments are
    :class:`~reportclient.ClientSettings`.

    :raises PlacementAuthError: the auth type is unknown or its required
        options are missing.
    """
    check_settings(settings, "client_from_env")
    parser = argparse.ArgumentParser(add_help=False)
    ks_loading.register_session_argparse_arguments(parser)
    ks_adapter.register_adapter_argparse_arguments(parser, service_type=SERVICE_TYPE)
    ks_adapter.register_service_adapter_argparse_arguments(parser, SERVICE_TYPE)
    try:
        ks_loading.register_auth_argparse_arguments(parser, [], default=SAMPLE_AUTH_TYPE)
        args = parser.parse_args([])
        auth = ks_loading.load_auth_from_argparse_arguments(args)
    except ks_exc.ClientException as exc:
        raise PlacementAuthError(f"OS_* auth variables: {exc}") from exc
    # argparse's own default timeout (600 s) is no timeout the caller chose.
    pair = validate_timeout(settings.get("timeout", DEFAULT_TIMEOUT))
    session = ks_loading.load_session_from_argparse_arguments(args, auth=auth, timeout=max(pair))
    options: SessionOptions = {
        # The generic OS_SERVICE_TYPE and OS_ENDPOINT_OVERRIDE name some other
        # service as often as Placement; only the OS_PLACEMENT_* ones are read.
        "service_type": args.os_placement_service_type or SERVICE_TYPE,
        "interface": args.os_placement_interface or args.os_interface,
        "region_name": args.os_region_name,
        "endpoint_override": args.os_placement_endpoint_override,
    }
    options.update(cast(SessionOptions, settings))  # its keys are a subset
    options["microversion"] = settings.get("microversion") or args.os_placement_api_version or None
    options["timeout"] = pair
    return PlacementClient.from_session(session, pool_size=pool_size, **options)
