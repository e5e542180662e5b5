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
import importlib
import logging
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session

from reportclient._clients.core import ClientSettings, SessionOptions, check_settings
from reportclient._clients.placement import PlacementClient
from reportclient._gateway.gateway import DEFAULT_CACHE_SIZE, DEFAULT_CACHE_TTL
from reportclient._wire.transport import (
    DEFAULT_POOL_SIZE,
    DEFAULT_TIMEOUT,
    size_pool,
    validate_timeout,
)
from reportclient.errors import InvalidInput, PlacementAuthError
from reportclient.retry import (
    DEFAULT_ATTEMPTS,
    DEFAULT_BASE,
    DEFAULT_CAP,
    DEFAULT_DEADLINE,
    default_retry,
)

if sys.version_info >= (3, 11):
    from typing import Unpack
else:  # Python 3.10
    from typing_extensions import Unpack

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

#: The group services read Placement's options from.
DEFAULT_GROUP = "placement"
_SERVICE_TYPE = "placement"
# nova's default: services talk to Placement on the internal network first.
_VALID_INTERFACES = ["internal", "public"]
_INTERFACES = ("public", "internal", "admin")
_ADAPTER_DEFAULTS: dict[str, Any] = {
    "service_type": _SERVICE_TYPE,
    "valid_interfaces": _VALID_INTERFACES,
}
# The auth plugin whose options oslo-config-generator documents; others are
# registered when ``auth_type`` names them.
_SAMPLE_AUTH_TYPE = "password"

#: Seconds per request: one number for both, or (connect, read).
Timeout = float | tuple[float, float]


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


def _own_opts(oslo_cfg: ModuleType) -> list[cfg.Opt]:
    """reportclient's settings, beside keystoneauth's in the same group."""
    return [
        oslo_cfg.FloatOpt(
            "cache_ttl",
            default=DEFAULT_CACHE_TTL,
            min=0,
            help="Seconds a consumer's cached allocations and generation are trusted for a "
            "write without reading them first. 0 trusts none: every update reads first. "
            "Another writer's change within the window costs one conflict and a re-read, "
            "never a lost update.",
        ),
        oslo_cfg.IntOpt(
            "cache_size",
            default=DEFAULT_CACHE_SIZE,
            min=0,
            help="Consumers whose state is cached (least recently used goes first); "
            "0 disables the cache.",
        ),
        oslo_cfg.IntOpt(
            "retry_attempts",
            default=DEFAULT_ATTEMPTS,
            min=1,
            help="Writes per operation before giving up on generation conflicts or an "
            "unreachable Placement. 1 surfaces every conflict to the caller.",
        ),
        oslo_cfg.FloatOpt(
            "retry_deadline",
            default=DEFAULT_DEADLINE,
            min=0,
            help="Seconds an operation may spend retrying, sleeps included.",
        ),
        oslo_cfg.FloatOpt(
            "retry_backoff_base",
            default=DEFAULT_BASE,
            min=0,
            help="First backoff ceiling in seconds before a contended write is retried; it "
            "doubles after each attempt and each sleep is a uniform random share of it.",
        ),
        oslo_cfg.FloatOpt(
            "retry_backoff_cap",
            default=DEFAULT_CAP,
            min=0,
            help="Largest backoff ceiling in seconds.",
        ),
        oslo_cfg.FloatOpt(
            "reconcile_max_staleness",
            min=0,
            help="Seconds a provider tree reconciled by this client is trusted: an unchanged "
            "description then costs no request, and the tree is proven again when the "
            "window ends. 300 is the setting for compute agents (nova's "
            "resource_provider_association_refresh). Unset: every reconcile proves every "
            "write.",
        ),
        oslo_cfg.StrOpt(
            "microversion",
            help="Pin the Placement microversion (1.28 to 1.39) instead of negotiating the "
            "newest that Placement and reportclient both speak.",
        ),
        oslo_cfg.IntOpt(
            "pool_size",
            default=DEFAULT_POOL_SIZE,
            min=1,
            help="HTTP connections kept to Placement; at least the number of threads that "
            "share one client.",
        ),
        oslo_cfg.FloatOpt(
            "connect_timeout",
            min=0,
            help=f"Seconds to wait for a connection to Placement. Unset: ``timeout`` if set, "
            f"else {DEFAULT_TIMEOUT[0]:g}.",
        ),
        oslo_cfg.FloatOpt(
            "read_timeout",
            min=0,
            help="Seconds to wait for Placement's answer to a request; a write whose answer "
            f"times out costs a read to settle. Unset: ``timeout`` if set, else "
            f"{DEFAULT_TIMEOUT[1]:g}.",
        ),
    ]


def _adapter_opts() -> list[cfg.Opt]:
    opts: list[cfg.Opt] = ks_loading.get_adapter_conf_options(include_deprecated=False)
    for opt in opts:
        if opt.dest in _ADAPTER_DEFAULTS:
            opt.default = (
                list(_VALID_INTERFACES)
                if opt.dest == "valid_interfaces"
                else (_ADAPTER_DEFAULTS[opt.dest])
            )
    return opts


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """The ``[placement]`` options, for oslo-config-generator.

    Registered as the ``reportclient`` namespace of the ``oslo.config.opts``
    entry point: session options (TLS, ``timeout``), ``auth_type`` and
    ``auth_section`` with the ``password`` plugin's options, adapter
    options (``region_name``, ``valid_interfaces``, ``endpoint_override``,
    ``connect_retries``, ``status_code_retries``...) and reportclient's own
    (``cache_ttl``, ``cache_size``, ``retry_*``, ``reconcile_max_staleness``,
    ``microversion``, ``pool_size``, ``connect_timeout``, ``read_timeout``).

    :raises MissingExtra: without oslo.config.
    """
    oslo_cfg = _require("oslo_config.cfg", "oslo", "reportclient.config.list_opts")
    seen: set[str] = set()
    opts: list[cfg.Opt] = []
    for opt in (
        ks_loading.get_session_conf_options()
        + ks_loading.get_auth_common_conf_options()
        + ks_loading.get_auth_plugin_conf_options(_SAMPLE_AUTH_TYPE)
        + _adapter_opts()
        + _own_opts(oslo_cfg)
    ):
        if opt.dest not in seen:
            seen.add(opt.dest)
            opts.append(opt)
    return [(DEFAULT_GROUP, opts)]


def register_opts(conf: cfg.ConfigOpts, group: str = DEFAULT_GROUP) -> None:
    """Register the session, auth, adapter and reportclient options on ``conf[group]``.

    Safe to call again, and alongside a service that registered options of
    the same names itself (nova's, cyborg's or neutron's ``[placement]``):
    those are kept and, where their type is the same, used.

    :raises MissingExtra: without oslo.config.
    """
    _register(conf, group, "reportclient.config.register_opts")


def _registered(conf: cfg.ConfigOpts, group: str, dest: str) -> cfg.Opt | None:
    """The definition another project registered under ``dest``, if it can be read.

    oslo.config has no public way to read a registered option back; its
    ``_get_opt_info`` has kept its shape for a decade. If that ever changes
    the neighbour's option is assumed compatible, which is what keystoneauth
    would assume too.
    """
    try:
        opt: cfg.Opt = conf._get_opt_info(dest, group)["opt"]
    except Exception:  # any failure here means "cannot tell"
        return None
    return opt


def _compatible(theirs: cfg.Opt, ours: cfg.Opt) -> bool:
    """Whether a value of ``theirs`` means what a value of ``ours`` would."""
    return type(theirs.type) is type(ours.type) and theirs.multi == ours.multi


def _register_opt(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str, opt: cfg.Opt) -> bool:
    """Register ``opt`` unless ``group`` holds an option of that name; True if it was new."""
    try:
        return bool(conf.register_opt(opt, group=group))
    except oslo_cfg.DuplicateOptError:
        theirs = _registered(conf, group, opt.dest)
        if theirs is not None and not _compatible(theirs, opt):
            LOG.debug(
                "[%s] %s is already registered by another project as %s; its definition stays",
                group,
                opt.dest,
                type(theirs.type).__name__,
            )
        return False


def _register(conf: cfg.ConfigOpts, group: str, needed_by: str) -> ModuleType:
    oslo_cfg = _require("oslo_config.cfg", "oslo", needed_by)
    conf.register_group(oslo_cfg.OptGroup(group))
    for opt in ks_loading.get_session_conf_options():
        _register_opt(oslo_cfg, conf, group, opt)
    try:
        # keystoneauth's own function: ``auth_type`` goes where ``auth_section`` points.
        ks_loading.register_auth_conf_options(conf, group)
    except oslo_cfg.DuplicateOptError:
        LOG.debug("[%s] auth_type or auth_section is defined by another project", group)
    for opt in ks_loading.get_adapter_conf_options(include_deprecated=False):
        if _register_opt(oslo_cfg, conf, group, opt) and opt.dest in _ADAPTER_DEFAULTS:
            # Only on an option reportclient registered: a service's own
            # default (nova's and cyborg's are the same) is the service's call.
            conf.set_default(opt.dest, _ADAPTER_DEFAULTS[opt.dest], group=group)
    for opt in _own_opts(oslo_cfg):
        _register_opt(oslo_cfg, conf, group, opt)
    return oslo_cfg


def _settings(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str) -> dict[str, Any]:
    """reportclient's own options as configured; a neighbour's incompatible one reads as default.

    :raises InvalidInput: for a value out of its range.
    """
    values: dict[str, Any] = {}
    for opt in _own_opts(oslo_cfg):
        theirs = _registered(conf, group, opt.dest)
        if theirs is not None and not _compatible(theirs, opt):
            LOG.warning(
                "[%s] %s belongs to another project (%s option); reportclient uses %r",
                group,
                opt.dest,
                type(theirs.type).__name__,
                opt.default,
            )
            values[opt.dest] = opt.default
            continue
        values[opt.dest] = _read(oslo_cfg, conf, group, opt.dest)
    return values


def _read(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str, name: str) -> Any:
    try:
        return conf[group][name]
    except (ValueError, oslo_cfg.Error) as exc:
        raise InvalidInput(f"[{group}] {name}: {exc}") from exc


def _is_set(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str, name: str) -> bool:
    """Whether ``name`` holds a value someone chose (file, command line, override)."""
    try:
        where = conf.get_location(name, group)
    except (oslo_cfg.NoSuchOptError, oslo_cfg.NoSuchGroupError):
        return False
    except (ValueError, oslo_cfg.Error) as exc:  # set, to a value its definition refuses
        raise InvalidInput(f"[{group}] {name}: {exc}") from exc
    return where is not None and where.location not in (
        oslo_cfg.Locations.opt_default,
        oslo_cfg.Locations.set_default,
    )


def _interfaces(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str) -> list[str] | None:
    """The interfaces to look Placement up by, checked; None leaves it to the group.

    neutron and cyborg name the interface ``endpoint_type`` (one of public,
    internal, admin); it stands for ``valid_interfaces`` when it is set and
    ``valid_interfaces`` is not.

    :raises InvalidInput: for an interface keystoneauth does not know.
    """
    chosen: list[str] | None = None
    if _is_set(oslo_cfg, conf, group, "endpoint_type"):
        endpoint_type = _read(oslo_cfg, conf, group, "endpoint_type")
        if _is_set(oslo_cfg, conf, group, "valid_interfaces"):
            LOG.debug("[%s] valid_interfaces is set; endpoint_type is not used", group)
        elif isinstance(endpoint_type, str):
            chosen = [endpoint_type]
            _check_interfaces(group, "endpoint_type", chosen)
    valid = _read(oslo_cfg, conf, group, "valid_interfaces")
    if chosen is None and valid:
        _check_interfaces(group, "valid_interfaces", list(valid))
    return chosen


def _check_interfaces(group: str, name: str, values: list[str]) -> None:
    bad = [value for value in values if value not in _INTERFACES]
    if bad:
        raise InvalidInput(
            f"[{group}] {name} = {','.join(values)}: {', '.join(map(repr, bad))} is not an "
            f"interface; use {', '.join(_INTERFACES)}"
        )


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
    :raises MissingExtra: without oslo.config.
    :raises PlacementAuthError: no ``auth_type``, one that names no plugin,
        or the plugin's required options are missing.
    :raises InvalidInput: an option holds a value that cannot be used (an
        unknown interface, a negative ``cache_ttl``, a microversion out of range).
    """
    check_settings(overrides, "client_from_conf")
    oslo_cfg = _register(conf, group, "reportclient.config.client_from_conf")
    own = _settings(oslo_cfg, conf, group)
    interfaces = _interfaces(oslo_cfg, conf, group)
    auth = _load_auth(oslo_cfg, conf, group)
    timeout = overrides.get("timeout")
    pair = (
        validate_timeout(timeout)
        if timeout is not None
        else _timeout(own, _read(oslo_cfg, conf, group, "timeout"))
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
    if not _read(oslo_cfg, conf, group, "service_type"):
        overrides["service_type"] = _SERVICE_TYPE  # a service registered it without a default
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
        openstack = _require("openstack", "sdk", "reportclient.config.client_from_cloud")
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
    ks_adapter.register_adapter_argparse_arguments(parser, service_type=_SERVICE_TYPE)
    ks_adapter.register_service_adapter_argparse_arguments(parser, _SERVICE_TYPE)
    try:
        ks_loading.register_auth_argparse_arguments(parser, [], default=_SAMPLE_AUTH_TYPE)
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
        "service_type": args.os_placement_service_type or _SERVICE_TYPE,
        "interface": args.os_placement_interface or args.os_interface,
        "region_name": args.os_region_name,
        "endpoint_override": args.os_placement_endpoint_override,
    }
    options.update(cast(SessionOptions, settings))  # its keys are a subset
    options["microversion"] = settings.get("microversion") or args.os_placement_api_version or None
    options["timeout"] = pair
    return PlacementClient.from_session(session, pool_size=pool_size, **options)
