"""The user's host rules (`network.allow`, `network.deny`) and the one DNS lookup a fetch hop connects by.

A rule matches a host by its labels after the same normalisation a URL's host gets (urls.canonical_host), never by
string prefix or suffix: a peer tool checked allowed domains with `startsWith`, so `trusted.com.evil.com` passed.
`*.example.com` matches the sub-domains of example.com only, never example.com itself nor `xexample.com`. An IP rule
matches the address it parses to, so `2130706433` in a rule or a URL is 127.0.0.1. Ports are ignored.

A name is resolved once per hop by `resolve`, every address it answers is checked, and the caller connects to the
address returned, never to the name: a second lookup is where DNS rebinding answers public first and private next.
A non-public address (addresses.is_public) is reached only when the exact name or the exact address is in
`network.allow`; a wildcard never lets one through, and `network.deny` wins over everything.
"""

from __future__ import annotations

import asyncio
import copy
import socket
from collections.abc import Awaitable, Callable, Sequence
from ipaddress import ip_address
from typing import Any

from sunwell.errors import SetupError
from sunwell.tools.network.addresses import Address, describe, is_public
from sunwell.tools.network.urls import Target, UrlRefused, canonical_host

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""(host, port) -> the addresses it resolves to, as text; raises OSError when it cannot resolve."""


class Unreachable(Exception):
    """A host that could not be resolved; the message names it."""


class _Rules:
    """One list of rules: exact names, `*.name` wildcards (kept as the labels after `*.`), and addresses."""

    def __init__(self, key: str, entries: Sequence[str]) -> None:
        self.names: set[str] = set()
        self.wildcards: set[tuple[str, ...]] = set()
        self.addresses: set[Address] = set()
        for entry in entries:
            wildcard = entry.startswith("*.")
            try:
                host, address = canonical_host(entry[2:] if wildcard else entry)
            except UrlRefused as exc:
                raise ValueError(f"{key}: {entry!r} is not a host name, *.name or IP address ({exc})") from None
            if wildcard and address is not None:
                raise ValueError(f"{key}: {entry!r} is a wildcard over an IP address; list the address itself")
            if wildcard:
                self.wildcards.add(tuple(host.split(".")))
            elif address is not None:
                self.addresses.add(address)
            else:
                self.names.add(host)

    def match(self, target: Target) -> bool:
        if target.address is not None:
            return target.address in self.addresses
        labels = tuple(target.host.split("."))
        return target.host in self.names or any(
            len(labels) > len(suffix) and labels[-len(suffix):] == suffix for suffix in self.wildcards)


class HostRules:
    """`network.allow` and `network.deny`. An entry is a name, a `*.name` wildcard or an IP address in any spelling;
    an invalid one raises ValueError naming its key and itself."""

    def __init__(self, allow: Sequence[str] = (), deny: Sequence[str] = ()) -> None:
        self._allow = _Rules("network.allow", allow)
        self._deny = _Rules("network.deny", deny)
        self._own: Callable[[], set[tuple[str, int]]] = set

    def with_own(self, endpoints: Callable[[], set[tuple[str, int]]]) -> HostRules:
        """These rules, and a session's own servers: `endpoints()` says which (loopback address, port) pairs its
        running background processes are reached on now (tools/processes/)."""
        rules = copy.copy(self)
        rules._own = endpoints
        return rules

    def own(self, target: Target, address: Address) -> bool:
        """Whether `address` and `target`'s port are where one of the session's own background processes listens
        now: only a loopback literal or `localhost`, never a name someone else's DNS could point at 127.0.0.1."""
        return (address.is_loopback and (target.address is not None or target.host == "localhost")
                and (str(address), target.port) in self._own())

    @classmethod
    def configured(cls, network: Any) -> HostRules:
        """The rules of the user's `network` settings (config NetworkSettings); SetupError names a bad entry."""
        try:
            return cls(network.allow, network.deny)
        except ValueError as exc:
            raise SetupError(f"invalid setting network: {exc}") from None

    def denied(self, target: Target) -> bool:
        """Whether `target`'s host is in `network.deny` (by name, wildcard or address)."""
        return self._deny.match(target)

    def allowed(self, target: Target) -> bool:
        """Whether `target`'s host is fetched without asking: in `network.allow` and not denied."""
        return self._allow.match(target) and not self.denied(target)

    def listed_exactly(self, target: Target) -> bool:
        """Whether `target`'s exact name or address is an entry of `network.allow` (a wildcard never is), and not
        denied: what lets a learned API use plain http."""
        if self.denied(target):
            return False
        return target.host in self._allow.names or (target.address is not None
                                                    and target.address in self._allow.addresses)

    def may_reach(self, target: Target, address: Address) -> bool:
        """Whether a connection for `target` may go to `address` (what its name resolved to, or its literal): never
        a denied host or address; a public address always; another only when `target`'s exact name or `address`
        itself is an entry of `network.allow`, never through a wildcard, or when it is the session's own server."""
        if self.denied(target) or address in self._deny.addresses:
            return False
        return (is_public(address) or target.host in self._allow.names or address in self._allow.addresses
                or self.own(target, address))


async def system_resolver(host: str, port: int) -> list[str]:
    """The system's resolver (getaddrinfo, off the event loop), each address once, in its order of preference."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def resolve(target: Target, rules: HostRules, resolver: Resolver | None = None) -> Address:
    """The address to connect to for `target`: its literal, or the first address its name resolves to when every
    address it resolves to may be reached (HostRules.may_reach). Raises UrlRefused when one may not (a name that
    answers one public and one private address is refused), Unreachable when the name does not resolve. Call it
    once per hop and connect to what it returns."""
    if rules.denied(target):
        raise UrlRefused(f"{target.host} is in network.deny")
    if target.address is not None:
        answers = [target.address]
    else:
        try:
            texts = await (resolver or system_resolver)(target.host, target.port)
        except OSError as exc:
            raise Unreachable(f"could not resolve {target.host}: {exc.strerror or exc}") from None
        if not texts:
            raise Unreachable(f"could not resolve {target.host}: no address")
        answers = [_answer(target, text) for text in texts]
    for address in answers:
        if not rules.may_reach(target, address):
            raise UrlRefused(_refusal(target, address))
    return answers[0]


def _answer(target: Target, text: str) -> Address:
    try:
        return ip_address(text.split("%", 1)[0])  # a link-local answer carries its zone: `fe80::1%eth0`
    except ValueError:
        raise UrlRefused(f"{target.host} resolved to {text!r}, which is not an IP address") from None


def _refusal(target: Target, address: Address) -> str:
    if not is_public(address):
        shown = target.host if target.address is not None else f"{target.host} resolves to {address}, which"
        return (f"{shown} is a {describe(address)} address; the user can allow it by listing its exact name or "
                "address in network.allow")
    return f"{target.host} resolves to {address}, which is in network.deny"
