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
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from reportclient._gateway.class_record import ClassRecord
from reportclient._gateway.consumer_cache import ConsumerCache
from reportclient._gateway.provider_cache import ProviderCache, Snapshot
from reportclient._gateway.provider_records import ProviderRecords
from reportclient._model.providers import ProviderInventories, ProviderTraits
from reportclient.errors import GenerationConflict, PlacementUnavailable

if TYPE_CHECKING:  # an annotation only: the gateway never imports the wire (setup.cfg)
    from reportclient._wire.transport import Reply, Transport

__all__ = ["Sending", "server_time"]


def server_time(answer: Reply, header: str) -> float | None:
    """An HTTP-date header of ``answer`` as POSIX seconds; None when absent or unreadable."""
    value = answer.headers.get(header) if answer.headers else None
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


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
        self._classes = ClassRecord(providers.clock)

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

    def _forget_names(self, classes: Iterable[str] = (), traits: Iterable[str] = ()) -> None:
        """A catalogue write renamed or deleted ``classes`` or deleted ``traits``.

        Every cached field naming one is forgotten, and the class listing
        that proved inventories' names is dropped with a class: the next
        proof lists the classes again.
        """
        classes, traits = list(classes), list(traits)
        if classes:
            self._providers.forget_naming(ProviderInventories, classes)
            self._classes.drop()
        if traits:
            self._providers.forget_naming(ProviderTraits, traits)
