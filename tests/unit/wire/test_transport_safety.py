"""The transport's safety rules: timeouts, no replayed writes, truthful and secret-free failures."""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
import urllib3
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from requests.adapters import BaseAdapter, HTTPAdapter
from urllib3.util.retry import Retry

from reportclient._wire import transport as transport_module
from reportclient._wire.failures import Kind, TransportFailure, _replays_writes, classify, redact
from reportclient._wire.transport import DEFAULT_TIMEOUT, Transport
from reportclient.errors import (
    InvalidInput,
    MicroversionUnsupported,
    PlacementAuthError,
    PlacementError,
    PlacementUnavailable,
)
from tests.support.answers import root_document
from tests.support.wire import URL

SECRET = "tok-SECRET-1234"
REQ = "req-55555555-5555-4555-8555-555555555555"
PATH = "/allocations/6f1b2a3c-0000-4000-8000-000000000001"
LIBRARIES = ("keystoneauth1", "requests", "urllib3")


def make_transport(
    url: str = URL,
    *,
    session: ks_session.Session | None = None,
    auth: Any = None,
    adapter_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Transport:
    """A transport as ``PlacementClient.from_endpoint`` builds one, pinned to 1.39."""
    if session is None:
        session = ks_session.Session(auth=auth or token_endpoint.Token(url, SECRET))
    adapter = ks_adapter.Adapter(session, endpoint_override=url, **(adapter_kwargs or {}))
    kwargs.setdefault("microversion", "1.39")
    return Transport(adapter, **kwargs)


def raised(*layers: BaseException) -> BaseException:
    """Raise ``layers`` innermost first, each inside the handler of the next.

    That is how keystoneauth and requests wrap what urllib3 raised, so the
    result carries the same implicit ``__context__`` chain as the real thing.
    """

    def throw(index: int) -> None:
        if index == len(layers) - 1:
            raise layers[index]
        try:
            throw(index + 1)
        except BaseException:
            raise layers[index]  # noqa: B904 -- the implicit context is the point

    try:
        throw(0)
    except BaseException as exc:
        return exc
    raise AssertionError("unreachable")


def prepared_with_token() -> requests.PreparedRequest:
    """What requests attaches to its exceptions: the request, headers and all."""
    return requests.Request("PUT", URL + PATH, headers={"X-Auth-Token": SECRET}).prepare()


def read_timeout_chain() -> BaseException:
    inner = urllib3.exceptions.ReadTimeoutError(None, URL, "Read timed out. (read timeout=0.2)")
    return raised(
        ks_exc.ConnectTimeout(f"Request to {URL}{PATH} timed out"),
        requests.exceptions.ReadTimeout(inner, request=prepared_with_token()),
        inner,
        TimeoutError("timed out"),
    )


def gave_up_connecting(
    ks_error: Exception, requests_error: type, reason: Exception
) -> BaseException:
    """keystoneauth's error over requests' over urllib3's MaxRetryError for ``reason``."""
    outer = urllib3.exceptions.MaxRetryError(None, PATH, reason=reason)
    return raised(ks_error, requests_error(outer, request=prepared_with_token()), outer)


def connect_timeout_chain() -> BaseException:
    return gave_up_connecting(
        ks_exc.ConnectTimeout(f"Request to {URL}{PATH} timed out"),
        requests.exceptions.ConnectTimeout,
        urllib3.exceptions.ConnectTimeoutError(None, "Connection to placement timed out."),
    )


def refused_chain() -> BaseException:
    return gave_up_connecting(
        ks_exc.ConnectFailure(f"Unable to establish connection to {URL}{PATH}"),
        requests.exceptions.ConnectionError,
        urllib3.exceptions.NewConnectionError(None, "[Errno 111] Connection refused"),
    )


def reset_chain() -> BaseException:
    reset = ConnectionResetError(104, "Connection reset by peer")
    protocol = urllib3.exceptions.ProtocolError("Connection aborted.", reset)
    return raised(
        ks_exc.ConnectFailure(f"Unable to establish connection to {URL}{PATH}"),
        requests.exceptions.ConnectionError(protocol, request=prepared_with_token()),
        protocol,
        reset,
    )


def read_retries_spent_chain() -> BaseException:
    """A GET whose read retries ran out: requests calls it a ConnectionError."""
    reason = urllib3.exceptions.ReadTimeoutError(None, URL, "Read timed out.")
    outer = urllib3.exceptions.MaxRetryError(None, PATH, reason=reason)
    return raised(
        ks_exc.ConnectFailure(f"Unable to establish connection to {URL}{PATH}"),
        requests.exceptions.ConnectionError(outer),
        outer,
    )


def bad_certificate_chain() -> BaseException:
    verify = ssl.SSLCertVerificationError(1, "certificate verify failed")
    wrapped = urllib3.exceptions.SSLError(verify)
    outer = urllib3.exceptions.MaxRetryError(None, PATH, reason=wrapped)
    return raised(
        ks_exc.SSLError(f"SSL exception connecting to {URL}{PATH}"),
        requests.exceptions.SSLError(outer),
        outer,
    )


def reachable(root: object) -> list[object]:
    """Everything reachable from an exception through str-able parts.

    ``__cause__``, ``__context__``, ``args``, ``vars()`` and containers,
    recursively; traceback and frame objects are left out.
    """
    found: list[object] = []
    stack: list[object] = [root]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if item is None or id(item) in seen:
            continue
        if isinstance(item, types.TracebackType | types.FrameType | type | types.ModuleType):
            continue
        seen.add(id(item))
        found.append(item)
        if isinstance(item, BaseException):
            stack.extend((item.__cause__, item.__context__, *item.args))
        if isinstance(item, dict):
            stack.extend((*item.keys(), *item.values()))
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        elif hasattr(item, "__dict__") and not callable(item):
            stack.extend(vars(item).values())
    return found


def assert_secret_free(exc: BaseException) -> None:
    for item in reachable(exc):
        assert SECRET not in str(item), item
        assert SECRET not in repr(item), item
        if isinstance(item, BaseException):
            module = type(item).__module__.split(".")[0]
            assert module not in LIBRARIES, f"{type(item)} reachable from the raised error"


# -- real sockets on 127.0.0.1 ---------------------------------------------


def serve(handle: Callable[[socket.socket], None]) -> Iterator[str]:
    """Accept connections on 127.0.0.1 and pass each to ``handle`` until torn down."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # how often the loop looks at the stop event
    stop = threading.Event()
    accepted: list[socket.socket] = []

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            accepted.append(conn)
            handle(conn)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        listener.close()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    yield from serve(lambda conn: None)


@pytest.fixture
def resetting_server() -> Iterator[str]:
    """Reads the request, then drops the connection unanswered (SO_LINGER 0: abortive close)."""

    def reset(conn: socket.socket) -> None:
        conn.settimeout(5)
        conn.recv(65536)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    yield from serve(reset)


@pytest.fixture
def closed_port() -> str:
    """A 127.0.0.1 URL nothing listens on."""
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


class RefusingToken(token_endpoint.Token):
    """An auth plugin that fails, and puts the token in what it raises."""

    def get_headers(self, session: Any, **kwargs: Any) -> dict[str, str]:
        exc = ks_exc.AuthorizationFailure(f"rejected, sent X-Auth-Token: {SECRET}")
        exc.headers = {"X-Auth-Token": SECRET}
        raise exc


# -- timeouts --------------------------------------------------------------


def test_default_timeout_is_five_seconds_to_connect_and_thirty_to_read():
    assert DEFAULT_TIMEOUT == (5.0, 30.0)
    assert "DEFAULT_TIMEOUT" in transport_module.__all__


def test_every_request_carries_the_default_timeout(wire):
    wire.put(URL + PATH, status_code=204)
    transport = make_transport(microversion=None)

    transport.request("PUT", PATH, json={})

    assert [r.timeout for r in wire.request_history] == [(5.0, 30.0), (5.0, 30.0)]


def test_one_number_is_both_the_connect_and_the_read_timeout(wire):
    wire.get(URL + PATH, json={})
    transport = make_transport(timeout=2)

    transport.request("GET", PATH)

    assert wire.last_request.timeout == (2.0, 2.0)
    assert transport.timeout == (2.0, 2.0)


def test_timeout_overrides_the_one_set_on_the_session(wire):
    wire.get(URL + PATH, json={})
    session = ks_session.Session(auth=token_endpoint.Token(URL, SECRET), timeout=99)
    transport = make_transport(session=session, timeout=(1, 7.5))

    transport.request("GET", PATH)

    assert wire.last_request.timeout == (1.0, 7.5)


@pytest.mark.parametrize(
    "timeout",
    [0, -1, 0.0, True, False, None, "5", float("nan"), float("inf"), (1,), (1, 2, 3), (0, 5),
     (5, -1), (True, 5), (5, None), ()],
)  # fmt: skip
def test_invalid_timeout_is_invalid_input(timeout):
    with pytest.raises(InvalidInput, match="timeout"):
        make_transport(timeout=timeout)


# -- retries: reads honour the operator's, writes are sent once ------------------


def test_read_honours_connect_retries_configured_on_the_adapter(wire):
    wire.get(
        URL + PATH,
        [
            {"exc": requests.exceptions.ConnectTimeout},
            {"exc": requests.exceptions.ConnectTimeout},
            {"json": {"allocations": {}}},
        ],
    )
    transport = make_transport(adapter_kwargs={"connect_retries": 2, "connect_retry_delay": 0.001})

    reply = transport.request("GET", PATH)

    assert reply.body == {"allocations": {}}
    assert len(wire.request_history) == 3


def test_read_honours_connect_retries_configured_on_the_session(wire):
    wire.get(URL + PATH, [{"exc": requests.exceptions.ConnectionError}, {"json": {}}])
    session = ks_session.Session(auth=token_endpoint.Token(URL, SECRET), connect_retries=1)
    transport = make_transport(session=session, adapter_kwargs={"connect_retry_delay": 0.001})

    transport.request("GET", PATH)

    assert len(wire.request_history) == 2


def test_read_honours_status_code_retries_configured_on_the_adapter(wire):
    wire.get(URL + PATH, [{"status_code": 503}, {"json": {}}])
    transport = make_transport(
        adapter_kwargs={"status_code_retries": 1, "status_code_retry_delay": 0.001}
    )

    transport.request("GET", PATH)

    assert len(wire.request_history) == 2


@pytest.mark.parametrize("method", ["PUT", "POST", "DELETE"])
def test_write_is_sent_once_whatever_connect_retries_the_adapter_has(wire, method):
    wire.register_uri(method, URL + PATH, exc=requests.exceptions.ConnectTimeout)
    transport = make_transport(adapter_kwargs={"connect_retries": 2, "connect_retry_delay": 0.001})

    with pytest.raises(PlacementUnavailable):
        transport.request(method, PATH, json={})

    assert len(wire.request_history) == 1


def test_write_is_sent_once_whatever_status_code_retries_the_adapter_has(wire):
    wire.put(URL + PATH, [{"status_code": 503}, {"status_code": 204}])
    transport = make_transport(
        adapter_kwargs={"status_code_retries": 2, "status_code_retry_delay": 0.001}
    )

    with pytest.raises(PlacementUnavailable):
        transport.request("PUT", PATH, json={})

    assert len(wire.request_history) == 1


def session_with(retry: Any, prefix: str = "http://") -> ks_session.Session:
    session = ks_session.Session(auth=token_endpoint.Token(URL, SECRET))
    session.session.mount(prefix, HTTPAdapter(max_retries=retry))
    return session


def test_session_whose_transport_adapter_replays_writes_is_refused_at_construction():
    session = session_with(Retry(total=3), prefix="http://placement.test/")

    with pytest.raises(InvalidInput) as err:
        make_transport(session=session)

    message = str(err.value)
    assert "'http://placement.test/'" in message
    assert "allowed_methods" in message
    assert "read=0, status=0, other=0" in message


def test_transport_adapter_mounted_later_is_refused_before_a_write_is_sent(wire):
    wire.put(URL + PATH, status_code=204)
    wire.get(URL + PATH, json={})
    session = ks_session.Session(auth=token_endpoint.Token(URL, SECRET))
    transport = make_transport(session=session)
    session.session.mount("http://", HTTPAdapter(max_retries=Retry(total=3)))

    with pytest.raises(InvalidInput, match="'http://'"):
        transport.request("PUT", PATH, json={})
    transport.request("GET", PATH)  # a read may be repeated: not refused

    assert [r.method for r in wire.request_history] == ["GET"]


@pytest.mark.parametrize(
    "retry",
    [
        Retry(total=3, allowed_methods={"GET"}, other=0),
        Retry(total=3, allowed_methods={"GET"}, other=0, status_forcelist=[503]),
        Retry(connect=3, read=0, status=0, other=0),
        Retry(total=3, read=False, status=0, other=0, allowed_methods=None),
        Retry(total=0),
        Retry(total=False, status_forcelist=[503]),
        0,
    ],
    ids=repr,
)
def test_retry_that_cannot_resend_a_sent_write_is_accepted(retry):
    assert not _replays_writes(retry)
    make_transport(session=session_with(retry))


@pytest.mark.parametrize(
    "retry",
    [
        Retry(total=3),  # urllib3's default allowed_methods include PUT and DELETE
        Retry(total=3, allowed_methods=None),  # None: every method
        Retry(total=3, allowed_methods={"POST"}, status=0, other=0),  # read retries
        Retry(total=None, read=0, other=0, status_forcelist=[503]),  # unbounded status
        Retry(total=3, read=0, other=0, allowed_methods={"PUT"}),  # Retry-After on 503
        Retry(total=3, allowed_methods={"GET"}),  # "other" errors ignore allowed_methods
        3,
        None,  # Retry.DEFAULT
    ],
    ids=repr,
)
def test_retry_that_can_resend_a_sent_write_is_refused(retry):
    assert _replays_writes(retry)
    with pytest.raises(InvalidInput, match="would resend a PUT, POST or DELETE"):
        make_transport(session=session_with(retry))


def test_urllib3_retries_other_errors_for_methods_outside_allowed_methods():
    """Why ``Retry(allowed_methods={"GET"})`` alone is not enough: see _replays_writes."""
    mid_exchange = urllib3.exceptions.SSLError("bad record mac")

    assert Retry(total=3, allowed_methods={"GET"}).increment("PUT", URL, error=mid_exchange)
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        Retry(total=3, allowed_methods={"GET"}, other=0).increment("PUT", URL, error=mid_exchange)


def test_adapters_other_than_http_adapters_are_ignored():
    class Double(BaseAdapter):
        max_retries = Retry(total=3)

    session = ks_session.Session(auth=token_endpoint.Token(URL, SECRET))
    session.session.mount("http://", Double())

    make_transport(session=session)


# -- naming the failure ----------------------------------------------------------


@pytest.mark.parametrize(
    ("chain", "kind"),
    [
        (connect_timeout_chain, Kind.CONNECT),
        (refused_chain, Kind.CONNECT),
        (bad_certificate_chain, Kind.CONNECT),
        (read_timeout_chain, Kind.READ_TIMEOUT),
        (read_retries_spent_chain, Kind.READ_TIMEOUT),
        (reset_chain, Kind.LOST),
    ],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_failure_is_classified_by_the_urllib3_exception_at_the_bottom(chain, kind):
    assert classify(chain()).kind is kind


def test_auth_plugin_failure_is_classified_as_auth_and_keeps_the_original():
    original = raised(ks_exc.AuthorizationFailure("no token"))
    failure = classify(original)

    assert failure.kind is Kind.AUTH
    assert failure.detail == "AuthorizationFailure: no token"
    assert failure.raised is original


def test_header_refused_by_requests_is_classified_as_not_sent():
    invalid = requests.exceptions.InvalidHeader("Invalid leading whitespace in header")
    exc = raised(ks_exc.UnknownConnectionError("Unexpected exception", invalid), invalid)

    assert classify(exc).kind is Kind.NOT_SENT


def test_cause_names_the_original_chain_outermost_first():
    failure = classify(read_timeout_chain())

    assert failure.cause.chain == (
        "keystoneauth1.exceptions.connection.ConnectTimeout",
        "requests.exceptions.ReadTimeout",
        "urllib3.exceptions.ReadTimeoutError",
        "TimeoutError",
    )
    assert str(failure.cause).startswith(
        "keystoneauth1.exceptions.connection.ConnectTimeout: Request to "
    )


def test_exception_being_handled_by_the_caller_is_not_part_of_the_chain():
    ambient = RuntimeError("the caller's own trouble")
    try:
        raise ambient
    except RuntimeError:
        exc = reset_chain()

    failure = classify(exc, ambient)

    assert "RuntimeError" not in failure.cause.chain
    assert failure.detail == "[Errno 104] Connection reset by peer"


@pytest.mark.parametrize(
    "text",
    [
        f"X-Auth-Token: {SECRET}",
        f"{{'X-Auth-Token': '{SECRET}', 'Accept': 'application/json'}}",
        f"x-auth-token={SECRET}",
        f"Authorization: Bearer {SECRET}",
        f"http://admin:{SECRET}@placement.test/",
    ],
)
def test_redact_removes_credentials_from_messages(text):
    assert SECRET not in redact(text)


def test_read_timeout_on_a_silent_server_is_named_with_outcome_unknown(silent_server):
    transport = make_transport(silent_server, timeout=(1, 0.2))

    with pytest.raises(PlacementUnavailable) as err:
        transport.request("PUT", PATH, json={})

    assert err.value.outcome_unknown is True
    assert (
        "no answer from Placement within 0.2 s (read timeout); the request may have been applied"
        in str(err.value)
    )
    assert isinstance(err.value.__cause__, TransportFailure)
    assert err.value.__cause__.chain[:3] == (
        "keystoneauth1.exceptions.connection.ConnectTimeout",
        "requests.exceptions.ReadTimeout",
        "urllib3.exceptions.ReadTimeoutError",
    )


@pytest.mark.parametrize(
    ("server", "outcome_unknown", "said"),
    [
        pytest.param(
            "closed_port",
            False,
            ("could not connect to Placement: ", "Connection refused"),
            id="refused-named-with-outcome-known",
        ),
        pytest.param(
            "resetting_server",
            True,
            ("connection to Placement lost: ", "the request may have been applied"),
            id="reset-named-lost-with-outcome-unknown",
        ),
    ],
)
def test_a_failed_connection_is_named_and_says_whether_the_outcome_is_known(
    request, server, outcome_unknown, said
):
    transport = make_transport(request.getfixturevalue(server))

    with pytest.raises(PlacementUnavailable) as err:
        transport.request("PUT", PATH, json={})

    assert err.value.outcome_unknown is outcome_unknown
    for words in said:
        assert words in str(err.value)


def test_auth_plugin_failure_is_an_auth_error_saying_nothing_was_sent():
    transport = make_transport(auth=RefusingToken(URL, SECRET))

    with pytest.raises(PlacementAuthError) as err:
        transport.request("PUT", PATH, json={})

    assert not isinstance(err.value, PlacementUnavailable)
    assert "authentication failed: AuthorizationFailure" in str(err.value)


def test_body_that_is_not_json_is_an_error_caused_by_text_only(wire):
    wire.get(URL + PATH, text="<html>hello</html>")

    with pytest.raises(PlacementError, match="not JSON") as err:
        make_transport().request("GET", PATH)

    assert isinstance(err.value.__cause__, TransportFailure)
    assert_secret_free(err.value)


# -- no secret in what is raised or logged ------------------------------------------


@pytest.fixture(params=["refused", "read_timeout", "reset"])
def failing_transport(request, closed_port, silent_server, resetting_server) -> Transport:
    """A transport with the recognisable token, whose next request fails one way."""
    url = {"refused": closed_port, "read_timeout": silent_server, "reset": resetting_server}
    return make_transport(url[request.param], timeout=(1, 0.2))


def test_no_token_or_library_exception_is_reachable_from_a_transport_failure(
    failing_transport, caplog
):
    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        with pytest.raises(PlacementError) as err:
            failing_transport.request("PUT", PATH, json={})

    assert isinstance(err.value.__cause__, TransportFailure)
    assert err.value.__context__ is None
    assert_secret_free(err.value)
    assert [r for r in caplog.records if r.name == "reportclient.wire"]
    assert SECRET not in caplog.text


def test_auth_failure_is_caused_by_keystoneauths_exception_stripped_of_the_token(caplog):
    # Callers catch keystoneauth's auth exceptions by type, so that one is the
    # cause; what it held (the plugin hung the token on it) is gone.
    transport = make_transport(auth=RefusingToken(URL, SECRET))
    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        with pytest.raises(PlacementAuthError) as err:
            transport.request("PUT", PATH, json={})

    cause = err.value.__cause__
    assert type(cause) is ks_exc.AuthorizationFailure
    assert err.value.__context__ is None
    assert cause.__traceback__ is None and cause.__context__ is None
    assert not hasattr(cause, "headers")
    assert isinstance(cause.__cause__, TransportFailure)
    assert_secret_free(cause.__cause__)
    for item in (err.value, cause):
        assert SECRET not in str(item) and SECRET not in repr(item)
        assert SECRET not in repr(vars(item))
    assert SECRET not in caplog.text


def test_failure_while_handling_another_keeps_only_that_one_as_context(silent_server):
    transport = make_transport(silent_server, timeout=(1, 0.2))
    with pytest.raises(PlacementUnavailable) as first:
        transport.request("PUT", PATH, json={})

    try:
        raise first.value
    except PlacementUnavailable:
        with pytest.raises(PlacementUnavailable) as second:
            transport.request("GET", PATH)

    assert second.value.__context__ is first.value
    assert not any(name.startswith("reportclient") for name in second.value.__cause__.chain)
    assert_secret_free(second.value)


# -- input edge cases ------------------------------------------------------------


@pytest.mark.parametrize("pin", ["1.39\n", " 1.39", "1.39 ", "1.3 9", "\u0661.39"])
def test_pinned_version_must_be_exactly_digits_dot_digits(pin):
    with pytest.raises(InvalidInput, match="microversion"):
        make_transport(microversion=pin)


@pytest.mark.parametrize("suffix", ["\n", " ", "\r\nX-Evil: 1"])
def test_global_request_id_with_anything_after_it_is_invalid_input(suffix):
    with pytest.raises(InvalidInput, match="global_request_id"):
        make_transport(global_request_id=REQ + suffix)


def test_server_above_our_range_is_refused_naming_both_ranges(wire):
    wire.get(URL + "/", json=root_document("1.45", min_version="1.40"))
    transport = make_transport(microversion=None)

    with pytest.raises(MicroversionUnsupported) as err:
        _ = transport.microversion

    assert "Placement offers microversions 1.40 to 1.45; reportclient speaks 1.28 to 1.39" in str(
        err.value
    )


def test_server_below_our_range_is_refused_naming_both_ranges(wire):
    wire.get(URL + "/", json=root_document("1.27"))
    transport = make_transport(microversion=None)

    with pytest.raises(MicroversionUnsupported) as err:
        _ = transport.microversion

    assert "Placement offers microversions 1.0 to 1.27; reportclient speaks 1.28 to 1.39" in str(
        err.value
    )
