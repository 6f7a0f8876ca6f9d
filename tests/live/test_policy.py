"""The allowlist on its own: hostile URLs and spec values refused, with reasons."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from toolproof.live import Refused, check_url, normalise_url
from toolproof.spec.live import LiveSpec

SPEC = LiveSpec(hosts=["api.example.org", "data.example.org:8443"], methods=["GET"])


def test_a_listed_host_is_allowed_with_its_normal_forms() -> None:
    assert check_url("https://API.Example.org./v1?x=1", "get", SPEC).host == "api.example.org"
    assert check_url("http://api.example.org:80/", "GET", SPEC).port == 80
    assert check_url("https://data.example.org:8443/x", "GET", SPEC).port == 8443


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://evil.example.net/", "not on this task's allowlist"),
        ("https://api.example.org.evil.net/", "not on this task's allowlist"),
        ("https://example.org/", "not on this task's allowlist"),
        ("https://api.example.org:8080/", "'api.example.org:8080' is not on"),
        ("https://data.example.org/", "not on this task's allowlist"),
        ("http://localhost/", "not on this task's allowlist"),
        ("http://127.0.0.1/", "IP addresses are never allowed"),
        ("http://[::1]:80/", "IP addresses are never allowed"),
        ("http://2130706433/", "IP addresses are never allowed"),
        ("http://0x7f.1/", "IP addresses are never allowed"),
        ("http://127.1/", "IP addresses are never allowed"),
        ("http://169.254.169.254/latest/meta-data/", "IP addresses are never allowed"),
        ("http://api.example.org@127.0.0.1/", "user info"),
        ("http://user:pw@api.example.org/", "user info"),
        ("file:///etc/passwd", "only http and https"),
        ("ftp://api.example.org/", "only http and https"),
        ("/relative/path", "only http and https"),
        ("http:///nohost", "no host"),
        ("http://api.example.org:99999/", "not a valid URL"),
    ],
)
def test_hostile_urls_are_refused_with_the_reason(url: str, reason: str) -> None:
    with pytest.raises(Refused, match=re.escape(reason)):
        check_url(url, "GET", SPEC)


def test_a_method_off_the_list_is_refused_405() -> None:
    with pytest.raises(Refused, match="method POST is not allowed") as info:
        check_url("https://api.example.org/", "post", SPEC)
    assert info.value.status == 405


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "svc.localhost", "::1", "http://x.org", "a b.org", "org"]
)
def test_spec_hosts_must_be_public_names(host: str) -> None:
    with pytest.raises(ValidationError, match="not a public host name"):
        LiveSpec(hosts=[host])


def test_spec_refuses_unknown_methods_and_misplaced_secrets() -> None:
    with pytest.raises(ValidationError, match="'TRACE' is not one of"):
        LiveSpec(hosts=["a.example.org"], methods=["TRACE"])
    with pytest.raises(ValidationError, match="exactly one of header or query"):
        LiveSpec(hosts=["a.example.org"], secrets=[{"env": "K", "host": "a.example.org"}])
    with pytest.raises(ValidationError, match="not in hosts"):
        LiveSpec(
            hosts=["a.example.org"],
            secrets=[{"env": "K", "host": "b.example.org", "header": "X-Key"}],
        )
    with pytest.raises(ValidationError, match="env"):
        LiveSpec(
            hosts=["a.example.org"],
            secrets=[{"env": "lower-case", "host": "a.example.org", "header": "X-Key"}],
        )


def test_normalised_urls_match_whatever_the_spelling_and_drop_secret_params() -> None:
    a = normalise_url("HTTPS://Api.Example.org:443/v1?b=2&a=1#frag")
    b = normalise_url("https://api.example.org/v1?a=1&b=2")
    assert a == b == "https://api.example.org/v1?a=1&b=2"
    assert normalise_url("http://x.org?key=s3cret&a=1", frozenset({"key"})) == "http://x.org/?a=1"


def test_a_bad_live_block_in_suite_yaml_names_the_file_and_field(tmp_path: Path) -> None:
    from toolproof.spec import SpecError, load_suite
    from toolproof_helpers import make_task, write_suite

    root = write_suite(tmp_path / "s", [make_task()], live={"hosts": ["127.0.0.1"]})
    with pytest.raises(SpecError) as info:
        load_suite(root)
    text = str(info.value)
    assert "suite.yaml" in text and "live.hosts" in text and "'127.0.0.1'" in text
    assert "Traceback" not in text
