"""Where a Secret may go, as pure functions: origins compared like with like, the annotation's
entries read (bound, old-form, unreadable), and a bound header set only where it may go."""

from __future__ import annotations

import pytest

from tiny_harness.core.secret_destinations import (
    BoundHeader,
    OriginError,
    attach_bound,
    entry,
    origin_of,
    parse_grants,
    parse_origin,
)


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Search.Example.com/mcp?x=1", "https://search.example.com"),
        ("https://search.example.com:443/", "https://search.example.com"),
        ("http://search.example.com:80", "http://search.example.com"),
        ("http://search.example.com:8000/mcp", "http://search.example.com:8000"),
        ("HTTP://127.0.0.1:9/", "http://127.0.0.1:9"),
        ("http://[0:0::1]:8080/x", "http://[::1]:8080"),
        ("https://search.example.com./", "https://search.example.com"),
    ],
)
def test_an_origin_is_scheme_host_and_port_in_one_spelling(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "url", ["ftp://x.example", "http://", "http://user:pw@x.example", "http://x.example:99999"]
)
def test_what_is_not_an_http_origin_is_refused(url: str) -> None:
    with pytest.raises(OriginError):
        origin_of(url)


def test_an_origin_as_written_has_no_path() -> None:
    assert parse_origin("https://a.example/") == "https://a.example"
    with pytest.raises(OriginError, match="leave out the path"):
        parse_origin("https://a.example/mcp")


def test_the_annotation_binds_each_object_to_its_origins() -> None:
    grants = parse_grants(
        "search@https://search.example.com, search@http://search.tools.svc:8000\n"
        "travel@HTTPS://travel.example:443"
    )

    assert grants.origins_for("search") == {
        "https://search.example.com",
        "http://search.tools.svc:8000",
    }
    assert grants.origins_for("travel") == {"https://travel.example"}
    assert grants.origins_for("other") == frozenset()
    assert grants.invalid == ()


def test_an_entry_naming_only_the_object_grants_nothing_but_is_recognised() -> None:
    grants = parse_grants("search, other@https://o.example")

    assert grants.origins_for("search") == frozenset()
    assert grants.names_without_origin("search")
    assert not grants.names_without_origin("other")


def test_an_unreadable_entry_is_kept_apart_with_why() -> None:
    grants = parse_grants("search@https://a.example/mcp, @https://b.example, ok@ftp://c")

    assert grants.entries == ()
    assert [text for text, _ in grants.invalid] == [
        "search@https://a.example/mcp",
        "@https://b.example",
        "ok@ftp://c",
    ]
    assert grants.invalid_for("search")[0][1].endswith("(<name>@<scheme>://<host>[:<port>])")
    assert parse_grants(None).entries == ()
    assert entry("search", "https://a.example") == "search@https://a.example"


def test_a_bound_header_is_set_only_where_its_secret_lets_it_go_and_never_shown() -> None:
    token = BoundHeader("Authorization", "Bearer t", frozenset({"https://a.example"}), "creds")
    headers = {"Authorization": "Bearer t", "Accept": "*/*"}  # as a redirect copies them

    withheld = attach_bound(headers, [token], "https://b.example/x")

    assert withheld == (token,)
    assert headers == {"Accept": "*/*"}
    assert attach_bound(headers, [token], "https://A.example:443/card") == ()
    assert headers["Authorization"] == "Bearer t"
    assert not token.may_go_to("http://a.example")  # another scheme is another origin
    assert "Bearer t" not in repr(token)
