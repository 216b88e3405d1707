"""The network policy's primitives (tools/network: addresses, urls, hosts), attacks first.

The attacks come from real bypasses of peer tools' fetchers: allowed domains matched with `startsWith`
(`trusted.com.evil.com` passed), a host name holding a NUL byte handed to the resolver, and every spelling of a
private address that a text filter does not recognise. The secret checks use the real Redactor.
"""

from __future__ import annotations

import re
import socket
from ipaddress import IPv4Address, IPv6Address, ip_address
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sunwell.tools.network.addresses import describe, embedded_ipv4, is_public, parse_ip
from sunwell.tools.network.hosts import HostRules, Unreachable, resolve
from sunwell.tools.network.urls import Target, UrlRefused, parse_url, secret_in_url
from sunwell.tools.policy.audit import Redactor


def answering(*rounds: list[str]):
    """A resolver that gives the next round of answers on each call and counts its calls."""
    calls: list[tuple[str, int]] = []

    async def resolver(host: str, port: int) -> list[str]:
        calls.append((host, port))
        return rounds[min(len(calls), len(rounds)) - 1]

    resolver.calls = calls  # type: ignore[attr-defined]
    return resolver


async def never_called(host: str, port: int) -> list[str]:
    raise AssertionError(f"{host} is a literal: it is not resolved")


# ---- the attack first: every spelling of a private address ---------------------------------------------------------

PRIVATE_SPELLINGS = [
    ("http://2130706433/", "127.0.0.1"),
    ("http://0177.0.0.1/", "127.0.0.1"),
    ("http://0x7f.0.0.1/", "127.0.0.1"),
    ("http://0x7f000001/", "127.0.0.1"),
    ("http://0X7F.1/", "127.0.0.1"),
    ("http://127.1/", "127.0.0.1"),
    ("http://127.0.1/", "127.0.0.1"),
    ("http://10.1/", "10.0.0.1"),
    ("http://0177.0x0.1/", "127.0.0.1"),
    ("http://0/", "0.0.0.0"),
    ("http://0.0.0.0/", "0.0.0.0"),
    ("http://127.0.0.1./", "127.0.0.1"),
    ("http://%31%32%37.0.0.1/", "127.0.0.1"),
    ("http://１２７.０.０.１/", "127.0.0.1"),
    ("http://[::1]/", "::1"),
    ("http://[::]/", "::"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1"),
    ("http://[::ffff:7f00:1]/", "::ffff:7f00:1"),
    ("http://[::ffff:a9fe:a9fe]/", "::ffff:a9fe:a9fe"),
    ("http://[::127.0.0.1]/", "::7f00:1"),
    ("http://[64:ff9b::7f00:1]/", "64:ff9b::7f00:1"),
    ("http://[64:ff9b:1::a00:1]/", "64:ff9b:1::a00:1"),
    ("http://[2002:7f00:1::]/", "2002:7f00:1::"),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "2001:0:4136:e378:8000:63bf:80ff:fffe"),  # Teredo, 127.0.0.1
    ("http://[fe80::1%25eth0]/", "fe80::1"),
    ("http://[fec0::1]/", "fec0::1"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
    ("http://2852039166/", "169.254.169.254"),
    ("http://[fd00:ec2::254]/", "fd00:ec2::254"),
    ("http://100.100.100.200/", "100.100.100.200"),
    ("http://168.63.129.16/", "168.63.129.16"),
    ("http://100.64.0.1/", "100.64.0.1"),
    ("http://192.168.1.1:8080/", "192.168.1.1"),
    ("http://172.16.0.1/", "172.16.0.1"),
    ("http://224.0.0.1/", "224.0.0.1"),
    ("http://255.255.255.255/", "255.255.255.255"),
]


@pytest.mark.parametrize(("url", "address"), PRIVATE_SPELLINGS)
async def test_every_spelling_of_a_private_address_is_that_address_and_refused(url, address):
    target = parse_url(url)
    assert target.address == ip_address(address) and target.host == address
    assert not is_public(target.address)
    with pytest.raises(UrlRefused, match="network.allow"):
        await resolve(target, HostRules(), never_called)


@pytest.mark.parametrize(("url", "address"), PRIVATE_SPELLINGS)
async def test_a_private_address_listed_exactly_in_another_spelling_is_reached(url, address):
    rules = HostRules(allow=[f"[{address}]" if ":" in address else address])
    target = parse_url(url)
    assert rules.allowed(target) and await resolve(target, rules, never_called) == ip_address(address)


@pytest.mark.parametrize("url", [
    "http://1.2.3.256/", "http://09.0.0.1/", "http://4294967296/", "http://1.2.3.4.5/", "http://127..1/",
    "http://foo.0x1/", "http://evil.com.127/", "http://0x100.0.0.1/", "http://1.16777216/", "http://" + "9" * 40 + "/",
    "http://[evil.com]/", "http://[::1/", "http://[::ffff:0177.0.0.1]/", "http://[::1]x/", "http://[1::2::3]/",
])  # fmt: skip
def test_a_host_that_looks_like_an_address_and_is_not_one_never_reaches_dns(url):
    with pytest.raises(UrlRefused):
        parse_url(url)


@given(st.text("0123456789abcdefxX.", min_size=1, max_size=24), st.booleans())
def test_every_host_the_c_resolver_reads_as_an_address_is_read_as_the_same_address(text, trailing_dot):
    try:
        expected = IPv4Address(socket.inet_aton(text))
    except OSError:
        return
    assert parse_ip(text + ("." if trailing_dot else "")) == expected


@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.lists(st.sampled_from("dox"), min_size=4, max_size=4))
def test_an_address_in_any_inet_aton_spelling_parses_back(value, count, bases):
    raw = value.to_bytes(4, "big")
    numbers = [*raw[:count - 1], int.from_bytes(raw[count - 1:], "big")]
    spell = {"d": str, "o": lambda n: f"0{n:o}", "x": lambda n: f"0x{n:x}"}
    assert parse_ip(".".join(spell[b](n) for b, n in zip(bases, numbers))) == IPv4Address(value)


# ---- the attack first: host names that look allowed ----------------------------------------------------------------

RULES = HostRules(allow=["allowed.com", "*.wild.com"])


@pytest.mark.parametrize(("url", "host"), [
    ("https://allowed.com.evil.com/", "allowed.com.evil.com"),
    ("https://allowed.com%2eevil.com/", "allowed.com.evil.com"),
    ("https://evil.com/allowed.com", "evil.com"),
    ("https://evil.com#@allowed.com", "evil.com"),
    ("https://evil.com?@allowed.com", "evil.com"),
    ("https://evilallowed.com/", "evilallowed.com"),
    ("https://xallowed.com/", "xallowed.com"),
    ("https://wild.com/", "wild.com"),
    ("https://xwild.com/", "xwild.com"),
    ("https://wild.com.evil.com/", "wild.com.evil.com"),
    ("https://\u0430llowed.com/", "xn--llowed-2nf.com"),  # Cyrillic а
])  # fmt: skip
def test_a_look_alike_host_is_not_allowed(url, host):
    target = parse_url(url)
    assert target.host == host and not RULES.allowed(target)


@pytest.mark.parametrize("url", [
    "https://allowed.com/", "https://ALLOWED.COM./docs", "https://ＡLLOWED.com/", "https://allowed。com/",
    "https://allowed.com:8443/", "https://a.wild.com/", "https://a.b.WILD.com/",
])  # fmt: skip
def test_case_width_trailing_dot_and_port_do_not_change_an_allowed_host(url):
    assert RULES.allowed(parse_url(url))


@pytest.mark.parametrize("url", [
    "https://allowed.com@evil.com/", "https://user:pass@allowed.com/", "https://@allowed.com/",
    "https://allowed.com\\@evil.com/", "https://evil.com\\allowed.com/", "https://allowed.com\\.evil.com/",
])  # fmt: skip
def test_user_info_and_backslashes_in_the_authority_are_refused(url):
    with pytest.raises(UrlRefused, match="user info|backslash"):
        parse_url(url)


CONTROLS = ["\x00", "\r", "\n", "\t", "\x1b", "\x7f", "\x85", "\x9f", "\u2028"]


@pytest.mark.parametrize("char", CONTROLS)
@pytest.mark.parametrize("template", [
    "https://allowed.com{c}.evil.com/", "https://allowed.com/a{c}b", "https://allowed.com/?q={c}",
    "{c}https://allowed.com/", "ht{c}tps://allowed.com/", "https://allowed.com/#{c}", "https://allowed.com{c}",
])  # fmt: skip
def test_a_control_character_anywhere_is_refused(template, char):
    with pytest.raises(UrlRefused, match="control character"):
        parse_url(template.format(c=char))


@pytest.mark.parametrize("encoded", ["%00", "%0d%0a", "%09", "%7F", "%C2%85"])
def test_a_percent_encoded_control_character_in_the_host_is_refused(encoded):
    with pytest.raises(UrlRefused, match="control character"):
        parse_url(f"https://allowed.com{encoded}.evil.com/")


@pytest.mark.parametrize("url", [
    "file:///etc/passwd", "ftp://allowed.com/", "javascript:alert(1)", "data:text/plain,hi", "gopher://allowed.com/",
    "//allowed.com/", "allowed.com/docs", "https:allowed.com", "https:/allowed.com", "https:///allowed.com",
    "http://", "http://:80/", "https://?q=1", "https:// allowed.com/", "http://under_score.com/",
])  # fmt: skip
def test_other_schemes_and_urls_without_a_host_are_refused(url):
    with pytest.raises(UrlRefused, match="only http and https|no host|not a valid|neither"):
        parse_url(url)


@pytest.mark.parametrize("port", ["0", "65536", "99999", "-1", "+80", "8_0", " 80", "٨٠", "0x50", "1:2"])
def test_a_port_out_of_range_or_not_plain_digits_is_refused(port):
    with pytest.raises(UrlRefused, match="port|more than one"):
        parse_url(f"http://allowed.com:{port}/")


# ---- the attack first: a URL that carries a secret out -------------------------------------------------------------

ENVIRON = {"MY_API_TOKEN": "s3cr3t-value-123456", "HOME": "/home/me"}


def is_secret(text: str) -> bool:
    return Redactor(ENVIRON)(text) != text


def every_byte_encoded(text: str) -> str:
    return "".join(f"%{b:02X}" for b in text.encode())


@pytest.mark.parametrize("url", [
    "https://example.com/search?key=sk-abcdef1234567890",
    "https://example.com/sk-abcdef1234567890/page",
    "https://example.com/?access_token=abc123def456",
    "https://example.com/?u=ghp_" + "a" * 36,
    "https://example.com/?q=s3cr3t-value-123456",
    "https://example.com/s3cr3t-value-123456",
    "https://example.com/?q=" + every_byte_encoded("s3cr3t-value-123456"),
    "https://example.com/?q=" + quote(every_byte_encoded("s3cr3t-value-123456")),
    "https://example.com/?q=" + every_byte_encoded("sk-abcdef1234567890"),
    "https://s3cr3t-value-123456.evil.com/",
])  # fmt: skip
def test_a_secret_in_the_host_path_or_query_is_found_raw_or_encoded(url):
    assert secret_in_url(parse_url(url), is_secret)


@pytest.mark.parametrize("url", [
    "https://docs.python.org/3/library/ipaddress.html", "https://example.com/search?q=ipaddress&page=2",
    "https://example.com/home/me", "https://example.com/?next=https://example.org/a",
])  # fmt: skip
def test_an_ordinary_url_carries_no_secret(url):
    assert not secret_in_url(parse_url(url), is_secret)


def test_the_fragment_is_not_sent_so_not_judged():
    target = parse_url("https://example.com/page#s3cr3t-value-123456")
    assert target.url == "https://example.com/page" and not secret_in_url(target, is_secret)


# ---- DNS: every answer checked, one lookup per hop -----------------------------------------------------------------

async def test_a_rebinding_name_is_judged_by_each_answer_and_the_caller_connects_to_the_one_returned():
    resolver = answering(["93.184.216.34"], ["127.0.0.1"])
    target, rules = parse_url("https://rebind.example/"), HostRules(allow=["*.example"])
    assert await resolve(target, rules, resolver) == IPv4Address("93.184.216.34")
    with pytest.raises(UrlRefused, match=r"rebind\.example resolves to 127\.0\.0\.1, which is a loopback"):
        await resolve(target, rules, resolver)
    assert resolver.calls == [("rebind.example", 443), ("rebind.example", 443)]


async def test_a_name_answering_one_public_and_one_private_address_is_refused():
    resolver = answering(["93.184.216.34", "10.0.0.7"])
    with pytest.raises(UrlRefused, match="10.0.0.7, which is a private address"):
        await resolve(parse_url("https://mixed.example/"), HostRules(), resolver)


async def test_a_private_answer_is_reached_by_the_exact_name_never_by_a_wildcard():
    resolver = answering(["10.0.0.5"])
    target = parse_url("http://db.internal.example/")
    wildcard = HostRules(allow=["*.internal.example"])
    assert wildcard.allowed(target)
    with pytest.raises(UrlRefused, match="listing its exact name"):
        await resolve(target, wildcard, resolver)
    assert await resolve(target, HostRules(allow=["DB.internal.example."]), resolver) == IPv4Address("10.0.0.5")
    assert await resolve(target, HostRules(allow=["10.0.0.5"]), resolver) == IPv4Address("10.0.0.5")


@pytest.mark.parametrize("answer", ["169.254.169.254", "fd00:ec2::254", "::ffff:127.0.0.1", "fe80::1%eth0", "::"])
async def test_every_kind_of_private_answer_is_refused(answer):
    with pytest.raises(UrlRefused, match="network.allow"):
        await resolve(parse_url("https://name.example/"), HostRules(), answering([answer]))


async def test_the_first_answer_is_returned_when_all_are_public():
    resolver = answering(["2606:4700:4700::1111", "1.1.1.1"])
    assert await resolve(parse_url("https://one.example/"), HostRules(), resolver) == IPv6Address("2606:4700:4700::1111")


async def test_a_name_that_does_not_resolve_is_unreachable_and_named():
    async def failing(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(Unreachable, match="could not resolve nowhere.example: Name or service not known"):
        await resolve(parse_url("https://nowhere.example/"), HostRules(), failing)
    with pytest.raises(Unreachable, match="no address"):
        await resolve(parse_url("https://nowhere.example/"), HostRules(), answering([]))
    with pytest.raises(UrlRefused, match="not an IP address"):
        await resolve(parse_url("https://odd.example/"), HostRules(), answering(["odd"]))


async def test_localhost_with_a_trailing_dot_is_resolved_by_the_system_and_refused_unless_listed():
    target = parse_url("http://LocalHost.:8000/")
    assert target.host == "localhost" and target.url == "http://localhost:8000/"
    with pytest.raises(UrlRefused, match="localhost resolves to .*loopback"):
        await resolve(target, HostRules())
    assert (await resolve(target, HostRules(allow=["localhost"]))).is_loopback


async def test_deny_wins_by_name_wildcard_and_address_however_reached():
    rules = HostRules(allow=["*.example.com", "127.0.0.1"], deny=["bad.example.com", "*.worse.example.com", "127.1",
                                                                  "93.184.216.34"])  # fmt: skip
    assert rules.allowed(parse_url("https://good.example.com/"))
    for url in ("https://bad.example.com/", "https://a.worse.example.com/", "http://2130706433/"):
        assert rules.denied(parse_url(url)) and not rules.allowed(parse_url(url))
        with pytest.raises(UrlRefused, match="network.deny"):
            await resolve(parse_url(url), rules, answering(["8.8.8.8"]))
    with pytest.raises(UrlRefused, match="93.184.216.34, which is in network.deny"):
        await resolve(parse_url("https://good.example.com/"), rules, answering(["93.184.216.34"]))


@pytest.mark.parametrize("entry", ["https://x.com", "x.com:443", "*", "*.127.0.0.1", "a..b", "", "1.2.3.256",
                                   "exa mple.com", "x.com/path"])
def test_an_invalid_rule_names_itself(entry):
    with pytest.raises(ValueError, match=r"network\.deny: " + re.escape(repr(entry))):
        HostRules(deny=[entry])


# ---- what a Target is ----------------------------------------------------------------------------------------------

def test_a_target_holds_the_url_as_it_will_be_requested():
    assert parse_url("HTTPS://Docs.Python.org:443?q=1#top") == Target(
        url="https://docs.python.org/?q=1", scheme="https", host="docs.python.org", port=443, address=None)
    v6 = parse_url("http://[0:0::1]:8080/a b")
    assert (v6.url, v6.host, v6.port, v6.authority, v6.origin) == (
        "http://[::1]:8080/a b", "::1", 8080, "[::1]:8080", "http://[::1]:8080")
    assert parse_url("http://allowed.com:/").port == 80


def test_a_redirect_location_is_joined_and_parsed_like_any_url():
    here = parse_url("https://allowed.com/a/b")
    assert here.join("c?x=1").url == "https://allowed.com/a/c?x=1"
    assert here.join("//evil.com/x").host == "evil.com"
    assert here.join("http://127.1/").address == IPv4Address("127.0.0.1")
    for location in ("/x\r\nSet-Cookie: a=b", "/\tx", "file:///etc/passwd"):
        with pytest.raises(UrlRefused):
            here.join(location)


def test_addresses_are_named_by_what_they_are():
    assert [describe(ip_address(a)) for a in ("127.0.0.1", "169.254.169.254", "100.64.0.1", "::ffff:10.0.0.1",
                                              "fd00:ec2::254", "ff02::1", "8.8.8.8")] == [
        "loopback", "cloud metadata", "CGNAT", "private (IPv4 10.0.0.1 inside)", "cloud metadata", "multicast",
        "public"]  # fmt: skip
    assert embedded_ipv4(IPv6Address("2001:0:4136:e378:8000:63bf:80ff:fffe")) == [
        IPv4Address("65.54.227.120"), IPv4Address("127.0.0.1")]


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8",
                                     "2002:808:808::1", "64:ff9b::808:808"])
def test_public_addresses_are_public_in_every_form(address):
    assert is_public(ip_address(address))


def test_a_name_is_not_an_address():
    assert [parse_ip(h) for h in ("example.com", "localhost", "1.2.3.com", "0x.com", "a1")] == [None] * 5


@given(st.text(max_size=40))
def test_any_text_is_a_target_or_refused_and_a_target_parses_to_itself(text):
    for raw in (text, "https://" + text):
        try:
            target = parse_url(raw)
        except UrlRefused:
            continue
        assert parse_url(target.url) == target
