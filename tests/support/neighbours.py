"""How neutron, cyborg and nova register their ``[placement]`` options, to test living beside them.

The shapes (names, types, defaults, choices, and which keystoneauth
functions are called) follow neutron's ``neutron/conf/common.py`` and
``neutron/common/config.py``, cyborg's ``cyborg/conf/placement.py`` and
``cyborg/conf/utils.py``, and nova's ``nova/conf/utils.py`` (the same
``register_ksa_opts`` as cyborg's) plus the ``[placement]`` options nova
carried while Placement lived in it. Help texts are shortened: a
different help text is exactly what makes oslo.config call two
definitions of one name a duplicate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from keystoneauth1 import loading as ks_loading

cfg: Any = None
try:
    from oslo_config import cfg
except ImportError:  # the tests that use this skip without oslo.config
    pass

GROUP = "placement"
_VERSION_OPTS = ("version", "min_version", "max_version")


def register_neutron(conf: Any) -> None:
    """neutron-server: keystoneauth's auth and session options, then its own two."""
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_session_conf_options(conf, GROUP)
    conf.register_opts(
        [
            cfg.StrOpt("region_name", help="Name of placement region to use."),
            cfg.StrOpt(
                "endpoint_type",
                default="public",
                choices=["public", "admin", "internal"],
                help="Type of the placement endpoint to use.",
            ),
        ],
        group=GROUP,
    )


def _register_ksa_opts(conf: Any) -> None:
    """nova's and cyborg's ``confutils.register_ksa_opts(conf, group, 'placement')``."""
    ks_loading.register_session_conf_options(conf, GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    opts = [
        opt
        for opt in ks_loading.get_adapter_conf_options(include_deprecated=False)
        if opt.dest not in _VERSION_OPTS
    ]
    cfg.set_defaults(opts, valid_interfaces=["internal", "public"], service_type="placement")
    conf.register_opts(opts, group=GROUP)
    # Placeholders the operator cannot set: the code, not the operator, knows versions.
    for name in _VERSION_OPTS:
        conf.register_opt(cfg.Opt(name, type=lambda value: None), group=GROUP)


def register_cyborg(conf: Any) -> None:
    """cyborg: its titled group, then keystoneauth's options with nova's defaults."""
    conf.register_group(cfg.OptGroup(GROUP, title="Placement Service Options"))
    _register_ksa_opts(conf)


def register_nova(conf: Any) -> None:
    """nova: as cyborg, plus what it kept in ``[placement]`` while Placement lived in it."""
    conf.register_group(cfg.OptGroup(GROUP, title="Placement Service Options"))
    _register_ksa_opts(conf)
    conf.register_opts(
        [
            cfg.BoolOpt("randomize_allocation_candidates", default=False, help="Shuffle."),
            cfg.StrOpt(
                "incomplete_consumer_project_id",
                default="00000000-0000-0000-0000-000000000000",
                help="Project for consumers written before 1.8.",
            ),
            cfg.StrOpt(
                "incomplete_consumer_user_id",
                default="00000000-0000-0000-0000-000000000000",
                help="User for consumers written before 1.8.",
            ),
        ],
        group=GROUP,
    )


NEIGHBOURS: dict[str, Callable[[Any], None]] = {
    "neutron": register_neutron,
    "cyborg": register_cyborg,
    "nova": register_nova,
}


def conf_after(service: str, path: str) -> Any:
    """A ConfigOpts on which ``service`` registered its options, then read ``path``."""
    conf = cfg.ConfigOpts()
    NEIGHBOURS[service](conf)
    conf([], project=service, default_config_files=[path])
    return conf
