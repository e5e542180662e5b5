"""The consumer cache never goes back in time for a consumer (threads sharing a client)."""

from __future__ import annotations

from reportclient._gateway import consumer_cache
from reportclient._gateway.consumer_cache import ConsumerCache
from reportclient._gateway.provider_cache import ProviderCache
from reportclient._model.consumers import ConsumerAllocations
from reportclient._model.providers import Inventory, ProviderInventories, ProviderTraits

C = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
RP = "3f1b8a52-5c3e-4f3a-9d1c-1a2b3c4d5e6f"


def at(generation, vcpu=1):
    if generation is None:
        return ConsumerAllocations.missing(C)
    return ConsumerAllocations(C, {RP: {"VCPU": vcpu}}, generation, "p", "u")


def test_a_slow_read_answered_after_a_newer_write_does_not_roll_the_entry_back():
    cache = ConsumerCache()
    read_sent = cache.ticket()  # a GET leaves, and is slow
    write_sent = cache.ticket()  # the same client's PUT leaves after it...
    cache.put(at(2, vcpu=2), sent=write_sent)  # ...and is answered first

    cache.put(at(1), sent=read_sent)  # the GET's answer, showing the older state

    assert cache.known(C).generation == 2


def test_an_overlapping_read_showing_a_later_generation_replaces_the_entry():
    cache = ConsumerCache()
    read_sent = cache.ticket()
    cache.put(at(2), sent=cache.ticket())
    cache.put(at(3), sent=read_sent)  # served after another writer's write
    assert cache.known(C).generation == 3


def test_an_overlapping_answer_of_another_incarnation_leaves_the_entry():
    cache = ConsumerCache()
    read_sent = cache.ticket()
    cache.put(at(None), sent=cache.ticket(), written=True)  # our release: deleted
    cache.put(at(4), sent=read_sent)  # a GET from before the release
    assert not cache.known(C).exists


def test_a_read_sent_after_the_entry_was_stored_always_replaces_it():
    """Not overlapping: a lower generation means the consumer was deleted and re-created."""
    cache = ConsumerCache()
    cache.put(at(5), sent=cache.ticket())
    cache.put(at(1), sent=cache.ticket())
    assert cache.known(C).generation == 1


def test_an_entry_older_than_the_recent_window_counts_as_overlapping(monkeypatch):
    monkeypatch.setattr(consumer_cache, "_RECENT", 2)
    cache = ConsumerCache()
    slow = cache.ticket()
    cache.put(at(3), sent=cache.ticket())
    for i in range(3):  # push C's store time out of the window
        cache.put(ConsumerAllocations.missing(f"{i:08d}-0000-4000-8000-000000000000"))
    cache.put(at(2), sent=slow)
    assert cache.known(C).generation == 3


# -- trust after an overlap (issue 35) ---------------------------------------------


def trusted_cache() -> ConsumerCache:
    return ConsumerCache(ttl=float("inf"))


def test_our_create_overlapped_by_a_read_showing_missing_is_kept_and_in_doubt():
    """Thread B's "missing" answered after thread A's create must not replace it."""
    cache = trusted_cache()
    write_sent = cache.ticket()  # A's claim leaves
    read_sent = cache.ticket()  # B's GET leaves while the claim is in flight
    cache.put(at(None), sent=read_sent)  # B is answered first: missing
    cache.put(at(1), sent=write_sent, written=True)  # then A's 204
    state, trusted = cache.lookup(C)
    assert state == at(1)
    assert not trusted


def test_a_read_showing_missing_after_our_create_leaves_our_create_in_doubt():
    cache = trusted_cache()
    write_sent = cache.ticket()
    read_sent = cache.ticket()
    cache.put(at(1), sent=write_sent, written=True)
    cache.put(at(None), sent=read_sent)
    state, trusted = cache.lookup(C)
    assert state == at(1)
    assert not trusted


def test_our_release_overlapped_by_an_older_read_is_never_trusted():
    """The shelve overwrite: a released state must not stay trusted (cache_ttl > 0)."""
    cache = trusted_cache()
    cache.put(at(1), sent=cache.ticket())
    read_sent = cache.ticket()
    release_sent = cache.ticket()
    cache.put(at(None), sent=release_sent, written=True)
    cache.put(at(1), sent=read_sent)  # the GET read before the release committed
    state, trusted = cache.lookup(C)
    assert not state.exists
    assert not trusted


def test_an_answer_in_flight_across_a_forget_arrives_in_doubt():
    cache = trusted_cache()
    read_sent = cache.ticket()
    cache.forget(C)  # a lost answer, a conflict or a raw write
    cache.put(at(3), sent=read_sent)
    assert cache.lookup(C) == (at(3), False)


def test_an_answer_sent_after_a_forget_is_trusted_again():
    cache = trusted_cache()
    cache.forget(C)
    cache.put(at(3), sent=cache.ticket())
    assert cache.lookup(C) == (at(3), True)


def test_an_answer_in_flight_across_a_clear_arrives_in_doubt():
    cache = trusted_cache()
    read_sent = cache.ticket()
    cache.clear()
    cache.put(at(3), sent=read_sent)
    assert cache.lookup(C) == (at(3), False)


# -- a provider field proven again without a read (issue 49) ------------------------------------
def test_a_reproof_restamps_the_entry_it_was_made_about():
    cache = ProviderCache(ttl=300, clock=lambda: 500.0)
    read = ProviderTraits(RP, 4, frozenset({"HW_CPU_X86_AVX2"}))
    cache.put(read, taken_at=0.0, sent=cache.ticket(), proven=1000.0)

    assert cache.reprove(read, 400.0, 1400.0)

    assert cache.entry(RP, ProviderTraits) == (read, 400.0)
    assert cache.proven(RP, ProviderTraits) == 1400.0


def test_a_reproof_never_replaces_what_this_client_wrote_since_it_took_the_entry():
    """Another thread's write lands between reconcile's look and its re-stamp."""
    cache = ProviderCache(ttl=300, clock=lambda: 500.0)
    read = ProviderTraits(RP, 4, frozenset({"HW_CPU_X86_AVX2"}))
    cache.put(read, taken_at=0.0, sent=cache.ticket(), proven=1000.0)
    taken = cache.entry(RP, ProviderTraits)  # reconcile takes the entry, lists the tree...
    assert taken is not None
    written = ProviderTraits(RP, 5, frozenset({"HW_CPU_X86_AVX2", "CUSTOM_MINE"}))
    cache.put(written, sent=cache.ticket(), written=True, proven=1300.0)  # ...the other thread

    assert not cache.reprove(taken[0], 400.0, 1400.0)

    assert cache.trusted(RP, ProviderTraits) == written
    assert cache.proven(RP, ProviderTraits) == 1300.0


def test_a_reproof_never_trusts_an_entry_that_went_into_doubt():
    cache = ProviderCache(ttl=300, clock=lambda: 500.0)
    read = ProviderTraits(RP, 4, frozenset())
    cache.put(read, taken_at=0.0, sent=cache.ticket())
    in_flight = cache.ticket()
    cache.forget(RP, ProviderTraits)  # a lost answer, or a raw write
    cache.put(read, sent=in_flight)  # the same content, answered across the forget: in doubt

    assert not cache.reprove(read, 400.0, 1400.0)
    assert cache.entry(RP, ProviderTraits) is None


OTHER_RP = "5d2c9e61-7a4b-4c3d-8e2f-3b4c5d6e7f80"


def _inventories(uuid, generation, *classes):
    return ProviderInventories(uuid, generation, {rc: Inventory(1) for rc in classes})


def test_a_catalogue_write_forgets_every_providers_field_that_names_it():
    cache = ProviderCache()
    cache.put(_inventories(RP, 1, "CUSTOM_GPU", "VCPU"))
    cache.put(_inventories(OTHER_RP, 4, "VCPU"))
    cache.put(ProviderTraits(RP, 1, frozenset({"CUSTOM_GPU"})))  # a trait of the same name

    cache.forget_naming(ProviderInventories, ["CUSTOM_GPU"])

    assert cache.entry(RP, ProviderInventories) is None
    assert cache.entry(OTHER_RP, ProviderInventories) is not None  # names none of them
    assert cache.entry(RP, ProviderTraits) is not None  # a class is not a trait


def test_an_answer_of_that_field_in_flight_across_a_catalogue_write_arrives_in_doubt():
    """Read before the rename, it may show the old name, for any provider."""
    cache = ProviderCache()
    sent = cache.ticket()  # a read of OTHER_RP's inventories leaves
    cache.forget_naming(ProviderInventories, ["CUSTOM_GPU"])  # this client renames the class

    cache.put(_inventories(OTHER_RP, 2, "CUSTOM_GPU"), sent=sent)

    assert cache.entry(OTHER_RP, ProviderInventories) is None  # in doubt
    cache.put(_inventories(OTHER_RP, 2, "CUSTOM_NEW"), sent=cache.ticket())  # read after it
    assert cache.entry(OTHER_RP, ProviderInventories) is not None
