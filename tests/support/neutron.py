"""neutron's side of the neutron adapter's unit tests: its ``[placement]`` options, no neutron.

neutron-server registers the group in ``neutron.common.config``:
keystoneauth's auth and session options, then ``region_name`` and
``endpoint_type`` (``neutron.conf.common.placement_opts``). The same
registration is made here on a fresh ``ConfigOpts``, so the tests read the
options the way the adapter reads neutron's, without neutron installed.
"""

from __future__ import annotations

import tenacity
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_config import fixture as cfg_fixture

from reportclient import default_retry

__all__ = ["GROUP", "neutron_conf", "never_sleeps"]

GROUP = "placement"


def neutron_conf() -> cfg_fixture.Config:
    """A set-up oslo.config fixture over options registered as neutron-server registers them.

    The caller cleans it up (``fixture.cleanUp()``); ``fixture.conf`` is
    what neutron passes its client (``cfg.CONF``).
    """
    conf = cfg.ConfigOpts()
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_session_conf_options(conf, GROUP)
    conf.register_opts(
        [
            cfg.StrOpt("region_name"),
            cfg.StrOpt("endpoint_type", default="public", choices=["public", "admin", "internal"]),
        ],
        group=GROUP,
    )
    conf([], project="neutron")
    fixture = cfg_fixture.Config(conf)
    fixture.setUp()
    return fixture


def never_sleeps(sleeps: list[float] | None = None) -> tenacity.Retrying:
    """The default policy's shape with a tiny backoff, recorded in ``sleeps`` instead of slept."""
    record = sleeps.append if sleeps is not None else (lambda _delay: None)
    return default_retry(base=0.001, cap=0.01, sleep=record)
