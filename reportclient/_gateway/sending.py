"""What every family of Placement routes shares: the wire, both caches, and the forget rule.

:class:`Sending` is the base of the gateway's route families
(:mod:`.consumer_routes`, :mod:`.provider_routes`, :mod:`.catalogue_routes`);
:class:`~reportclient._gateway.gateway.Gateway` is made of them. The rule
for a failed request is written here once: a conflict or a lost answer
forgets its subjects, a refusal keeps them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from reportclient._gateway.consumer_cache import ConsumerCache
from reportclient._gateway.provider_cache import ProviderCache, Snapshot
from reportclient._gateway.provider_records import ProviderRecords
from reportclient.errors import GenerationConflict, PlacementUnavailable

if TYPE_CHECKING:  # an annotation only: the gateway never imports the wire (setup.cfg)
    from reportclient._wire.transport import Transport

__all__ = ["Sending"]


def _may_have_landed(exc: BaseException) -> bool:
    """Whether a failed write may still have changed its subject."""
    return isinstance(exc, GenerationConflict) or (
        isinstance(exc, PlacementUnavailable) and exc.outcome_unknown
    )


class Sending:
    """The wire and the caches a route family sends through and tells.

    :param wire: the transport (:class:`reportclient._wire.transport.Transport`),
        typed against the class itself so its signatures are written once;
        its ``request`` raises a :class:`~reportclient.errors.PlacementError`
        subclass for anything but a 2xx (:class:`~reportclient.errors.GenerationConflict`
        for a conflict, :class:`~reportclient.errors.PlacementUnavailable` with
        ``outcome_unknown`` when a write may have landed unseen).
    :param consumers: the client's consumer cache.
    :param providers: the client's provider-field cache.
    :param records: the client's provider records (which providers make up which tree).
    """

    def __init__(
        self,
        wire: Transport,
        consumers: ConsumerCache,
        providers: ProviderCache,
        records: ProviderRecords | None = None,
    ) -> None:
        self._wire = wire
        self._consumers = consumers
        self._providers = providers
        self._records = ProviderRecords() if records is None else records

    def _get(self, path: str, request_id: str | None) -> Any:
        return self._wire.request("GET", path, global_request_id=request_id).body

    @contextmanager
    def _forgetting(
        self,
        consumers: Iterable[str] = (),
        fields: Iterable[tuple[str, type[Snapshot]]] = (),
    ) -> Iterator[None]:
        """Forget the subjects when the request may have changed them and no state says how."""
        try:
            yield
        except BaseException as exc:
            if _may_have_landed(exc):
                for consumer in consumers:
                    self._consumers.forget(consumer)
                for uuid, kind in fields:
                    self._providers.forget(uuid, kind)
            raise
