"""IP literals in every spelling a resolver accepts, and whether an address is one a network tool may reach unasked.

A filter that reads a host as text loses to its spellings: `2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`,
`[::ffff:127.0.0.1]`, `[::127.0.0.1]` and `64:ff9b::7f00:1` all reach the loopback address. `parse_ip` reads a host
the way the C `inet_aton` and the WHATWG URL standard do, so a host is judged by the address it is, and a host that
looks like an address but is not one is an error, never a name handed to DNS. `is_public` judges that address; an
IPv6 address that carries an IPv4 one (mapped, compatible, NAT64, 6to4, Teredo) is judged by the IPv4 it carries,
which is where the packets end up.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv6Address, ip_network

Address = IPv4Address | IPv6Address

# A part `inet_aton` reads as a number: decimal, `0`-prefixed octal, `0x` hex (`0x` alone is 0, as in glibc).
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]*|[0-9]+")

METADATA = {ip_network(n): "cloud metadata" for n in (
    "169.254.169.254/32",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle instance metadata
    "169.254.170.2/32",    # AWS ECS task metadata and credentials
    "100.100.100.200/32",  # Alibaba Cloud metadata
    "168.63.129.16/32",    # Azure WireServer: in public space, reachable only from inside Azure
    "fd00:ec2::254/128",   # AWS instance metadata over IPv6
)}  # fmt: skip
"""Named first so a refusal says what the address is; all but Azure's are inside the ranges below too."""

NOT_PUBLIC = METADATA | {ip_network(n): word for n, word in (
    ("0.0.0.0/8", "unspecified"),          # "this network"; a connection to 0.0.0.0 reaches the local host
    ("10.0.0.0/8", "private"),             # RFC 1918
    ("100.64.0.0/10", "CGNAT"),            # RFC 6598 shared address space, the carrier's side of the NAT
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),          # RFC 1918
    ("192.0.0.0/24", "reserved"),          # IETF protocol assignments
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "reserved"),        # the deprecated 6to4 relay anycast (RFC 7526)
    ("192.168.0.0/16", "private"),         # RFC 1918
    ("198.18.0.0/15", "reserved"),         # benchmarking (RFC 2544)
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),           # including the broadcast address 255.255.255.255
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "private"),         # local-use NAT64 (RFC 8215): never routed on the internet
    ("100::/64", "reserved"),              # discard-only (RFC 6666)
    ("2001:2::/48", "reserved"),           # benchmarking (RFC 5180)
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),        # RFC 9637, newer than the stdlib's tables
    ("5f00::/16", "reserved"),             # SRv6 segment identifiers (RFC 9602)
    ("fc00::/7", "private"),               # unique local addresses
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),           # deprecated, still routed inside some networks
    ("ff00::/8", "multicast"),
)}  # fmt: skip
"""Ranges a fetch never reaches unasked, with the word a refusal uses. The stdlib's `is_global`, `is_multicast` and
`is_reserved` refuse what this table leaves out (its registry changes between Python versions, hence the table)."""

_NAT64 = ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix: the last 32 bits are the IPv4 address


def parse_ip(host: str) -> Address | None:
    """The address `host` spells, or None when `host` is a name.

    IPv4 as `inet_aton` reads it: 1 to 4 dot-separated parts, each decimal, `0`-prefixed octal or `0x` hex, the last
    part filling the remaining bytes (`127.1` and `2130706433` are 127.0.0.1); one trailing dot is allowed. IPv6 in or
    out of brackets, a zone id (`%eth0`, `%25eth0`) dropped. Raises ValueError for a host that looks like an address
    and is not one (`1.2.3.256`, `09.0.0.1`, `foo.0x1`, `[evil.com]`): a host whose last label is a number is an
    address or nothing (the WHATWG URL rule), so it never reaches DNS as a name.
    """
    if host.startswith("[") or host.endswith("]"):
        if not (host.startswith("[") and host.endswith("]")):
            raise ValueError(f"{host!r} has an unmatched bracket")
        return _parse_ipv6(host[1:-1])
    if ":" in host:
        return _parse_ipv6(host)
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not _NUMBER.fullmatch(parts[-1]):
        return None
    if len(parts) > 4:
        raise ValueError(f"{host!r} ends in a number but has more than four parts")
    *head, last = [_number(part, host) for part in parts]
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        raise ValueError(f"{host!r} is out of range for an IPv4 address")
    return IPv4Address(sum(n << (8 * (3 - i)) for i, n in enumerate(head)) + last)


def _number(part: str, host: str) -> int:
    if not _NUMBER.fullmatch(part):
        raise ValueError(f"{host!r} ends in a number but {part!r} is not one")
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part.startswith("0"):
        if not set(part) <= set("01234567"):
            raise ValueError(f"{host!r} has {part!r}, which is neither octal nor decimal")
        return int(part, 8)
    if len(part) > 20:  # longer than any 64-bit number: out of range, and int() would refuse past 4300 digits
        raise ValueError(f"{host!r} is out of range for an IPv4 address")
    return int(part)


def _parse_ipv6(text: str) -> IPv6Address:
    address = text.split("%", 1)[0]  # the zone only picks an interface; the address is what is judged
    try:
        return IPv6Address(address)
    except ValueError:
        raise ValueError(f"{text!r} is not an IPv6 address") from None


def embedded_ipv4(address: IPv6Address) -> list[IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (none for most): IPv4-mapped `::ffff:0:0/96`, IPv4-compatible
    `::/96` (deprecated, still read by some stacks), NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, and Teredo `2001::/32`
    (its server and its client)."""
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if int(address) >> 32 == 0 or address in _NAT64:
        return [IPv4Address(int(address) & 0xFFFFFFFF)]
    if address.sixtofour is not None:
        return [address.sixtofour]
    return list(address.teredo or ())


def is_public(address: Address) -> bool:
    """Whether `address` is on the public internet: not loopback, private, CGNAT, link-local, site-local, multicast,
    unspecified, reserved, documentation or cloud metadata (NOT_PUBLIC and the stdlib's view). An IPv6 address that
    carries IPv4 addresses is public only when each of them is."""
    if any(address in network for network in NOT_PUBLIC):
        return False
    if isinstance(address, IPv6Address) and (carried := embedded_ipv4(address)):
        return all(is_public(ipv4) for ipv4 in carried)
    return address.is_global and not address.is_multicast and not address.is_reserved


def describe(address: Address) -> str:
    """One word for what `address` is ("loopback", "private", "cloud metadata", ...), "public" when it is."""
    for network, word in NOT_PUBLIC.items():  # METADATA comes first: the most telling word wins
        if address in network:
            return word
    if isinstance(address, IPv6Address) and (carried := embedded_ipv4(address)):
        inner = [ipv4 for ipv4 in carried if not is_public(ipv4)]
        return f"{describe(inner[0])} (IPv4 {inner[0]} inside)" if inner else "public"
    return "public" if is_public(address) else "reserved"
