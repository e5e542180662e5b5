"""The concurrent machine's checker is honest: fabricated violating histories are reported.

Each test hands :class:`tests.machines.concurrent_model.Checker` one step that a correct client
could
never produce (or a cache view that lies) and asserts the finding's column; the controls show
the same shapes without the fault pass clean. The last test runs the whole machine on the fake
with a deliberately broken cache (every write's answer forgotten back to "missing") and
asserts the machine reports it.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.machines.concurrent_model import MISSING, Checker, Event, Finding, State
from tests.machines.write_model import Allocs, freeze, plus

RP = "11111111-1111-1111-1111-111111111111"
X: Allocs = freeze({RP: {"VCPU": 1}})
Y: Allocs = freeze({RP: {"VCPU": 2}})


def ev(kind: str, invoked: int, returned: int, **fields: object) -> Event:
    event = Event(str(fields.pop("actor", "shared-0")), kind, "c0",
                  bool(fields.pop("shared", True)), invoked=invoked, returned=returned)  # fmt: skip
    for name, value in fields.items():
        setattr(event, name, value)
    return event


def cache_of(anyhow: State | None, trusted: State | None = None):  # type: ignore[no-untyped-def]
    return lambda c, t: trusted if t else anyhow


def columns(findings: Sequence[Finding]) -> list[str]:
    return sorted(f.column for f in findings)


def step(checker: Checker, start: State, end: State, events: list[Event],
         anyhow: State | None, trusted: State | None = None, n: int = 0,
         lost: set[str] | None = None) -> list[str]:  # fmt: skip
    found = checker.check_step(n, {"c0": start}, {"c0": end}, events,
                               cache_of(anyhow, trusted), lost or set())  # fmt: skip
    return columns(found)


def test_a_clean_claim_then_read_passes() -> None:
    checker = Checker(["c0"])
    claim = ev("claim", 1, 2, want=X, outcome="ok", answer=(1, X))
    assert step(checker, MISSING, (1, X), [claim], (1, X), (1, X)) == []
    get = ev("get", 3, 4, outcome="ok", answer=(1, X))
    assert step(checker, (1, X), (1, X), [get], (1, X), n=1) == []


def test_a_claim_whose_answer_the_cache_replaced_with_missing_is_stale_while_quiet() -> None:
    # Issue 35: B's read answered "missing" overlapping A's claim replaced A's answer.
    claim = ev("claim", 1, 4, want=X, outcome="ok", answer=(1, X))
    get = ev("get", 2, 3, actor="shared-1", outcome="ok", answer=MISSING)
    assert step(Checker(["c0"]), MISSING, (1, X), [claim, get], MISSING) == ["stale cache (quiet)"]


def test_consumer_changed_over_the_clients_own_write_is_reported() -> None:
    checker = Checker(["c0"])
    claim = ev("claim", 1, 2, want=X, outcome="ok", answer=(1, X))
    step(checker, MISSING, (1, X), [claim], (1, X))
    again = ev("claim", 3, 4, want=Y, outcome="typed", answer=(1, X),
               error="ConsumerChanged: it holds X")  # fmt: skip
    assert step(checker, (1, X), (1, X), [again], (1, X), n=1) == ["own-write error"]


def test_consumer_changed_after_another_client_wrote_is_no_finding() -> None:
    checker = Checker(["c0"])
    step(checker, MISSING, (1, X), [ev("claim", 1, 2, want=X, outcome="ok", answer=(1, X))],
         (1, X))  # fmt: skip
    other = ev("claim", 3, 4, actor="other", shared=False, want=Y, overwrite=True,
               outcome="ok", answer=(2, Y))  # fmt: skip
    step(checker, (1, X), (2, Y), [other], (1, X), n=1)
    again = ev("claim", 5, 6, want=X, outcome="typed", answer=(2, Y), error="ConsumerChanged")
    assert step(checker, (2, Y), (2, Y), [again], (2, Y), n=2) == []


def test_a_trusted_entry_older_than_a_raw_write_is_reported() -> None:
    checker = Checker(["c0"])
    step(checker, MISSING, (1, X), [ev("claim", 1, 2, want=X, outcome="ok", answer=(1, X))],
         (1, X), (1, X))  # fmt: skip
    raw = ev("raw put", 3, 4, actor="raw", want=Y, generation=1, outcome="ok", status=204)
    assert step(checker, (1, X), (2, Y), [raw], (1, X), (1, X), n=1) == [
        "trusted after last answer"
    ]


def test_a_trusted_entry_after_a_lost_delete_is_reported() -> None:
    checker = Checker(["c0"])
    step(checker, MISSING, (1, X), [ev("claim", 1, 2, want=X, outcome="ok", answer=(1, X))],
         (1, X), (1, X))  # fmt: skip
    lost = ev("force_release", 3, 4, outcome="unknown", error="PlacementUnavailable")
    assert step(checker, (1, X), MISSING, [lost], (1, X), (1, X), n=1, lost={"c0"}) == [
        "trusted after last answer"
    ]


def test_a_trusted_entry_at_placements_generation_with_other_content_is_data_loss() -> None:
    checker = Checker(["c0"])
    get = ev("get", 1, 2, outcome="ok", answer=(1, X))
    # A lying cache: it says Y at generation 1 where Placement (and the answer) hold X.
    assert step(checker, (1, X), (1, X), [get], None, (1, Y)) == [
        "trusted after last answer",
        "trusted wrong content",
    ]


def test_a_write_applied_twice_is_reported() -> None:
    add = ev("update add", 1, 2, want=X, mutate=lambda s: plus(s, X), outcome="ok",
             answer=(2, plus(X, X)))  # fmt: skip
    # Placement shows the addition twice (gen 3), the answer once.
    end = (3, plus(plus(X, X), X))
    assert step(Checker(["c0"]), (1, X), end, [add], None) == ["applied twice"]


def test_an_acknowledged_write_that_never_landed_is_lost() -> None:
    claim = ev("claim", 1, 2, want=Y, outcome="ok", answer=(2, Y))
    assert step(Checker(["c0"]), (1, X), (1, X), [claim], None) == ["lost"]


def test_an_update_that_created_a_missing_consumer_is_resurrected() -> None:
    upd = ev("update replace", 1, 2, want=X, mutate=lambda s: X, outcome="ok", answer=(1, X))
    assert step(Checker(["c0"]), MISSING, (1, X), [upd], None) == ["resurrected"]


def test_a_claim_over_allocations_the_client_never_saw_is_clobbered() -> None:
    claim = ev("claim", 1, 2, want=X, outcome="ok", answer=(2, X))
    assert step(Checker(["c0"]), (1, Y), (2, X), [claim], None) == ["clobbered"]


def test_a_read_that_saw_a_state_placement_never_held_is_not_linearizable() -> None:
    get = ev("get", 1, 2, outcome="ok", answer=(7, Y))
    assert step(Checker(["c0"]), (1, X), (1, X), [get], None) == ["not linearizable"]


def test_real_time_order_is_respected() -> None:
    # The read returned before the claim began, so it cannot have seen the claim's state.
    get = ev("get", 1, 2, actor="shared-1", outcome="ok", answer=(1, X))
    claim = ev("claim", 3, 4, want=X, outcome="ok", answer=(1, X))
    assert "not linearizable" in step(Checker(["c0"]), MISSING, (1, X), [get, claim], (1, X))
    # Overlapping, it may have.
    get = ev("get", 1, 4, actor="shared-1", outcome="ok", answer=(1, X))
    claim = ev("claim", 2, 3, want=X, outcome="ok", answer=(1, X))
    assert step(Checker(["c0"]), MISSING, (1, X), [get, claim], (1, X)) == []


def test_the_machine_reports_a_deliberately_broken_cache() -> None:
    """A mutant cache that stores every answer as "missing": the run must say so."""
    import reportclient as rc
    from tests.machines.concurrent_machine import Machine
    from tests.unit.machines.test_concurrent_machine_fake import FakeBackend

    backend = FakeBackend()
    machine = Machine(backend, seed=1, ttl=60.0, steps=10)
    backend.machine = machine
    cache = machine.client._core.gateway._consumers  # a mutant reaches inside, as mutants do
    put = cache.put

    def forgetful(state: rc.ConsumerAllocations, **kwargs: object) -> None:
        put(rc.ConsumerAllocations.missing(state.consumer_uuid), **kwargs)  # type: ignore[arg-type]

    cache.put = forgetful  # type: ignore[method-assign]
    table = machine.run()
    assert table.counts["stale cache (quiet)"] > 0, table.render()
    assert table.reports["stale cache (quiet)"][0].count("step ") >= 1


def test_two_concurrent_deletes_that_both_say_deleted_are_no_finding() -> None:
    # Placement does not serialize DELETE /allocations: two workers may both answer 204.
    first = ev("force_release", 1, 3, outcome="ok", status=1)
    second = ev("force_release", 2, 4, actor="shared-1", outcome="ok", status=1)
    assert step(Checker(["c0"]), (1, X), MISSING, [first, second], MISSING) == []


def test_placements_own_create_race_is_reported_apart() -> None:
    # Two claims of a missing consumer both created it (both answered generation 1): the
    # second replaced the first at generation 2. Placement's race, not the client's.
    mine = ev("claim", 1, 4, want=X, outcome="ok", answer=(1, X))
    other = ev("claim", 2, 3, actor="other", shared=False, want=Y, overwrite=True,
               outcome="ok", answer=(1, Y))  # fmt: skip
    assert step(Checker(["c0"]), MISSING, (2, Y), [mine, other], None) == ["placement create race"]


def test_a_raw_write_refused_by_an_in_server_race_is_no_finding() -> None:
    # 409 "concurrently updated" on a missing consumer: another worker's bump, not a generation.
    raw = ev("raw put", 1, 2, actor="raw", want=X, generation=None, outcome="ok", status=409)
    assert step(Checker(["c0"]), MISSING, MISSING, [raw], None) == []


def test_placements_delete_race_is_reported_apart() -> None:
    # force_release answered "deleted" while the client's claim, carrying the generation it
    # read before, landed at generation 2 over it: Placement's unguarded DELETE, seen on MariaDB.
    checker = Checker(["c0"])
    mine = ev("claim", 1, 2, want=X, outcome="ok", answer=(1, X))
    assert step(checker, MISSING, (1, X), [mine], (1, X), (1, X)) == []
    claim = ev("claim", 3, 6, want=Y, outcome="ok", answer=(2, Y))
    delete = ev("force_release", 4, 5, actor="other", shared=False, outcome="ok", status=1)
    assert step(checker, (1, X), (2, Y), [claim, delete], None, n=1) == ["placement delete race"]


# -- Placement's orphaned rows: the step of 2026-12-04's CI run, and what they cannot excuse --


def orphan_step(rows: dict[str, dict[str, int]] | None) -> list[str]:
    """The shared client's claim lost its answer; the other client's claim answered ok; the
    consumer reads missing (Placement deleted the row the shared claim auto-created)."""
    lost = ev("claim", 1, 5, want=Y, outcome="unknown")
    other = ev("claim", 2, 4, actor="other", shared=False, want=X, outcome="ok", answer=(1, X))
    checker = Checker(["c0"])
    found = checker.check_step(0, {"c0": MISSING}, {"c0": MISSING}, [lost, other],
                               cache_of(None), {"c0"}, rows)  # fmt: skip
    return columns(found)


def test_a_consumer_read_missing_with_its_rows_left_behind_is_placements() -> None:
    assert orphan_step({"c0": {RP: 1}}) == ["placement orphaned rows"]


def test_orphaned_rows_excuse_nothing_they_do_not_account_for() -> None:
    assert orphan_step(None) == ["lost"]  # no rows read: the client's
    assert orphan_step({"c0": {RP: 3}}) == ["lost"]  # rows no operation wrote
    assert orphan_step({"c1": {RP: 1}}) == ["lost"]  # another consumer's rows
