"""The ``[placement]`` options: their definitions, registration beside a service's, reading.

What :mod:`reportclient.config`'s builders read, kept apart from the
builders themselves: reportclient's own options, keystoneauth's session,
auth and adapter options registered only where a neighbour (nova, cyborg,
neutron) has not registered the name already, and the reading of them back
as values reportclient can use (see :mod:`reportclient.config` for the
neighbourly rules).
"""

from __future__ import annotations

import importlib
import logging
from types import ModuleType
from typing import TYPE_CHECKING, Any

from keystoneauth1 import loading as ks_loading

from reportclient._gateway.gateway import DEFAULT_CACHE_SIZE, DEFAULT_CACHE_TTL
from reportclient._model.assumptions import ProofAssumption
from reportclient._wire.transport import DEFAULT_POOL_SIZE, DEFAULT_TIMEOUT
from reportclient.errors import InvalidInput
from reportclient.retry import (
    DEFAULT_ATTEMPTS,
    DEFAULT_BASE,
    DEFAULT_BUDGET_FLOOR,
    DEFAULT_BUDGET_RATIO,
    DEFAULT_CAP,
    DEFAULT_DEADLINE,
)

if TYPE_CHECKING:
    from oslo_config import cfg

__all__ = [
    "DEFAULT_GROUP",
    "SAMPLE_AUTH_TYPE",
    "SERVICE_TYPE",
    "MissingExtra",
    "interfaces_of",
    "list_opts",
    "own_settings",
    "read_opt",
    "register",
    "register_opts",
    "require",
]

LOG = logging.getLogger("reportclient.config")

#: The group services read Placement's options from.
DEFAULT_GROUP = "placement"
SERVICE_TYPE = "placement"
# nova's default: services talk to Placement on the internal network first.
_VALID_INTERFACES = ["internal", "public"]
_INTERFACES = ("public", "internal", "admin")
_ADAPTER_DEFAULTS: dict[str, Any] = {
    "service_type": SERVICE_TYPE,
    "valid_interfaces": _VALID_INTERFACES,
}
# The auth plugin whose options oslo-config-generator documents; others are
# registered when ``auth_type`` names them.
SAMPLE_AUTH_TYPE = "password"


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


def require(module: str, extra: str, needed_by: str) -> ModuleType:
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
            help="First backoff ceiling in seconds before an operation is retried after "
            "Placement did not answer (no connection, a reset, a 5xx) and before a read is "
            "sent again; it doubles after each attempt and each sleep is a uniform random "
            "share of it. A write that conflicted with other writers waits within a window "
            "the client learns from the conflicts instead (doc/source/retry.rst); this "
            "option does not change it.",
        ),
        oslo_cfg.FloatOpt(
            "retry_backoff_cap",
            default=DEFAULT_CAP,
            min=0,
            help="Largest backoff ceiling in seconds.",
        ),
        oslo_cfg.FloatOpt(
            "retry_budget_ratio",
            default=DEFAULT_BUDGET_RATIO,
            min=0,
            help="Retries the client may make per operation it begins, over the last 10 "
            "seconds, whatever the retry policy allows: every retry of every operation "
            "(a write's next attempt, conflicts retried at once included, and a read sent "
            "again) spends from this budget, and a retry that succeeds gives its token back, "
            "so only retries that fail are charged. When it is spent an operation that cannot have "
            "written fails at once with PlacementOverloaded instead of adding load to a "
            "Placement that is already behind.",
        ),
        oslo_cfg.FloatOpt(
            "retry_budget_floor",
            default=DEFAULT_BUDGET_FLOOR,
            min=0,
            help="Retries per second the client may always make, however few operations it "
            "begins: what a quiet client (a compute agent) keeps for the conflicts it meets.",
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
        oslo_cfg.ListOpt(
            "proof_assumptions",
            default=[],
            item_type=oslo_cfg.types.String(choices=[a.value for a in ProofAssumption]),
            help="Promises about every other writer of this Placement that save the provider "
            "tree view and reconcile_max_staleness a request per window. "
            "aggregates_at_1_19: every writer of aggregates uses microversion 1.19 or later "
            "(else an aggregate set below 1.19 is not seen until this client reads it "
            "again); no_class_renames: no writer renames a custom resource class (microversions "
            "1.2-1.6). Empty (the default): every write Placement accepts is seen within the "
            "window, at the price of reading each provider's aggregates once per window and "
            "listing the resource classes once per window when an inventory names a custom one.",
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
    (``cache_ttl``, ``cache_size``, ``retry_*`` (``retry_budget_*`` included),
    ``reconcile_max_staleness``, ``proof_assumptions``,
    ``microversion``, ``pool_size``, ``connect_timeout``, ``read_timeout``).

    :raises MissingExtra: without oslo.config.
    """
    oslo_cfg = require("oslo_config.cfg", "oslo", "reportclient.config.list_opts")
    seen: set[str] = set()
    opts: list[cfg.Opt] = []
    for opt in (
        ks_loading.get_session_conf_options()
        + ks_loading.get_auth_common_conf_options()
        + ks_loading.get_auth_plugin_conf_options(SAMPLE_AUTH_TYPE)
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
    register(conf, group, "reportclient.config.register_opts")


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


def _foreign_type(conf: cfg.ConfigOpts, group: str, ours: cfg.Opt) -> str | None:
    """The type another project registered ``ours``' name with, if a value of it means other.

    None when nothing readable is registered there or when a value of the
    registered option means what a value of ``ours`` would (same type, same
    ``multi``).
    """
    theirs = _registered(conf, group, ours.dest)
    if theirs is None or (type(theirs.type) is type(ours.type) and theirs.multi == ours.multi):
        return None
    return type(theirs.type).__name__


def _register_opt(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str, opt: cfg.Opt) -> bool:
    """Register ``opt`` unless ``group`` holds an option of that name; True if it was new."""
    try:
        return bool(conf.register_opt(opt, group=group))
    except oslo_cfg.DuplicateOptError:
        theirs = _foreign_type(conf, group, opt)
        if theirs is not None:
            LOG.debug(
                "[%s] %s is already registered by another project as %s; its definition stays",
                group,
                opt.dest,
                theirs,
            )
        return False


def register(conf: cfg.ConfigOpts, group: str, needed_by: str) -> ModuleType:
    oslo_cfg = require("oslo_config.cfg", "oslo", needed_by)
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


def own_settings(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str) -> dict[str, Any]:
    """reportclient's own options as configured; a neighbour's incompatible one reads as default.

    :raises InvalidInput: for a value out of its range.
    """
    values: dict[str, Any] = {}
    for opt in _own_opts(oslo_cfg):
        theirs = _foreign_type(conf, group, opt)
        if theirs is not None:
            LOG.warning(
                "[%s] %s belongs to another project (%s option); reportclient uses %r",
                group,
                opt.dest,
                theirs,
                opt.default,
            )
            values[opt.dest] = opt.default
            continue
        values[opt.dest] = read_opt(oslo_cfg, conf, group, opt.dest)
    return values


def read_opt(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str, name: str) -> Any:
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


def interfaces_of(oslo_cfg: ModuleType, conf: cfg.ConfigOpts, group: str) -> list[str] | None:
    """The interfaces to look Placement up by, checked; None leaves it to the group.

    neutron and cyborg name the interface ``endpoint_type`` (one of public,
    internal, admin); it stands for ``valid_interfaces`` when it is set and
    ``valid_interfaces`` is not.

    :raises InvalidInput: for an interface keystoneauth does not know.
    """
    chosen: list[str] | None = None
    if _is_set(oslo_cfg, conf, group, "endpoint_type"):
        endpoint_type = read_opt(oslo_cfg, conf, group, "endpoint_type")
        if _is_set(oslo_cfg, conf, group, "valid_interfaces"):
            LOG.debug("[%s] valid_interfaces is set; endpoint_type is not used", group)
        elif isinstance(endpoint_type, str):
            chosen = [endpoint_type]
            _check_interfaces(group, "endpoint_type", chosen)
    valid = read_opt(oslo_cfg, conf, group, "valid_interfaces")
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
