"""A URL the network tools may request, parsed once into a `Target` whose host is the one that will be connected to.

Refused before any library reads the URL: one longer than `MAX_URL`, a scheme other than `http`/`https`, a URL without `//host`, user info
(`allowed.com@evil.com`), a control character anywhere (C0, DEL, C1, line separators; `urlsplit` silently drops tab,
CR and LF, so the raw text is checked first, and the percent-decoded host again: `%00`), a backslash in the authority
(browsers read it as `/`, `urlsplit` does not, so the two disagree on the host), a port outside 1-65535, and a host
that is neither an IP address (in any spelling, see addresses.py) nor a name IDNA 2008 with UTS #46 mapping accepts.
A peer tool passed a host holding a NUL byte to its resolver; this one never does.

The host is normalised the way a browser does it: percent-decoded, mapped by UTS #46 (case, full-width forms, the
ideographic full stop), encoded to ASCII, trailing dot dropped, and an IP literal written in its canonical form. So
`ＡLLOWED.com.` is `allowed.com`, `аllowed.com` with a Cyrillic а is `xn--llowed-2nf.com`, and `0x7f.1` is `127.0.0.1`:
what the rules in hosts.py compare is what will be resolved.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, unquote_plus, urljoin

import idna

from sunwell.tools.network.addresses import Address, parse_ip

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL = 32_768
"""Characters of a URL at most: servers refuse far shorter ones (8 KB is common), and the redactor that looks for a
secret in it keeps 64 KB of a string (tools/policy/audit.py)."""
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_PORT = re.compile(r"[0-9]{1,5}")
_HOST_NAME = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*")


class UrlRefused(Exception):
    """A URL, host or address a network tool will not request; the message is one line saying why."""


@dataclass(frozen=True)
class Target:
    """A parsed, normalised URL. `host` is IDNA ASCII in lower case without a trailing dot, or an IP address in its
    canonical text (IPv6 without brackets); `address` is set when the host is an IP literal; `port` is explicit or
    the scheme's default; `url` is what is requested: the normalised host, the path and query as given, no fragment."""

    url: str
    scheme: str
    host: str
    port: int
    address: Address | None

    @property
    def authority(self) -> str:
        """The host as written in a URL and a `Host` header: IPv6 in brackets, the port only when not the default."""
        return _authority(self.scheme, self.host, self.port)

    @property
    def origin(self) -> str:
        """`scheme://authority`: what a redirect keeps or leaves."""
        return f"{self.scheme}://{self.authority}"

    def join(self, location: str) -> Target:
        """The Target a redirect's `Location` names, relative to this one, parsed and refused like any URL."""
        _refuse_controls(location, "the redirect location")  # before urljoin, which drops tab, CR and LF
        return parse_url(urljoin(self.url, location))


def parse_url(raw: str) -> Target:
    """`raw` as a Target, or UrlRefused saying what is wrong with it (module docstring)."""
    if len(raw) > MAX_URL:
        raise UrlRefused(f"the URL is {len(raw):,} characters long; at most {MAX_URL:,} are requested")
    _refuse_controls(raw, "the URL")
    scheme_match = _SCHEME.match(raw)
    scheme = scheme_match.group(1).lower() if scheme_match else ""
    if scheme not in DEFAULT_PORTS:
        raise UrlRefused(f"only http and https URLs are fetched, not {scheme + ':' if scheme else 'this one'}")
    rest = raw[scheme_match.end():]
    if not rest.startswith("//"):
        raise UrlRefused("the URL has no host: write it as http(s)://host/path")
    authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
    if "\\" in authority:
        raise UrlRefused("the URL has a backslash in its host part")
    if "@" in authority:
        raise UrlRefused("the URL has user info (user@host), which is never sent: put credentials nowhere in a URL")
    host_text, port = _split_port(authority, DEFAULT_PORTS[scheme])
    host, address = canonical_host(host_text)
    path_and_query = rest[2 + len(authority):].partition("#")[0]  # the fragment is never sent
    path = path_and_query if path_and_query.startswith("/") else "/" + path_and_query
    url = f"{scheme}://{_authority(scheme, host, port)}{path}"
    return Target(url=url, scheme=scheme, host=host, port=port, address=address)


def canonical_host(text: str) -> tuple[str, Address | None]:
    """A host as written in a URL or a rule (percent-encoded, any case or width, any IP spelling) in its canonical
    form, with its address when it is an IP literal; UrlRefused when it is neither a valid name nor an address."""
    try:
        decoded = unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise UrlRefused("the host is not valid percent-encoded UTF-8") from None
    _refuse_controls(decoded, "the host")
    if not decoded:
        raise UrlRefused("the URL has no host")
    try:
        if decoded.startswith("[") or ":" in decoded:  # `::1` in a rule, `%3A` in a URL
            address = parse_ip(decoded)
        else:
            ascii_name = idna.encode(decoded, uts46=True).decode("ascii").lower().removesuffix(".")
            address = parse_ip(ascii_name)  # after the mapping: full-width digits spell an address too
    except ValueError as exc:  # idna.IDNAError is one
        raise UrlRefused(f"{text!r} is neither a valid host name nor an IP address: {exc}") from None
    if address is not None:
        return str(address), address
    if not _HOST_NAME.fullmatch(ascii_name) or len(ascii_name) > 253:
        raise UrlRefused(f"{text!r} is not a valid host name")
    return ascii_name, None


def secret_in_url(target: Target, is_secret: Callable[[str], bool]) -> bool:
    """Whether the host, path or query of `target` carries a secret, by `is_secret` (in Sunwell, "the Redactor
    changes this text"): as written, percent-decoded once and twice, and form-decoded (`+` as a space). The host
    counts: a secret in a sub-domain leaves by the DNS lookup, before any request."""
    text = target.url.split("://", 1)[1]
    once = unquote(text)
    return any(is_secret(form) for form in dict.fromkeys((text, once, unquote(once), unquote_plus(text))))


def _authority(scheme: str, host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port == DEFAULT_PORTS[scheme] else f"{shown}:{port}"


def _split_port(authority: str, default: int) -> tuple[str, int]:
    if authority.startswith("["):
        end = authority.find("]")
        host, after = (authority[:end + 1], authority[end + 1:]) if end > 0 else (authority, "")
        if after and not after.startswith(":"):
            raise UrlRefused("the URL has text after its bracketed IPv6 address")
        port_text = after[1:] if after else ""
    else:
        host, _, port_text = authority.partition(":")
        if ":" in port_text:
            raise UrlRefused("the URL's host has more than one ':'; an IPv6 address goes in brackets")
    if not port_text:
        return host, default
    if not _PORT.fullmatch(port_text) or not 0 < int(port_text) < 65536:
        raise UrlRefused(f"the port {port_text!r} is not a number from 1 to 65535")
    return host, int(port_text)


def _refuse_controls(text: str, what: str) -> None:
    for char in text:
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            raise UrlRefused(f"{what} has a control character (U+{ord(char):04X}), which is never sent")
