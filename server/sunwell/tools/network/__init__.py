"""Where the network tools may go: a URL parsed and refused before any request (urls), an IP literal in every spelling
and whether an address is public (addresses), the user's `network.allow` / `network.deny` and the one DNS lookup a
fetch hop connects by (hosts). Pure functions and one injected resolver; no request is made here."""
