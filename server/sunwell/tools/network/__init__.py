"""Where the network tools may go and how they get there: a URL parsed and refused before any request (urls), an IP
literal in every spelling and whether an address is public (addresses), the user's `network.allow` / `network.deny`
and the one DNS lookup a hop connects by (hosts), the policy a tool call is judged by (policy), and the one way out
every request leaves by, pinned, capped and timed (client); web_fetch's pages (fetch, cache, convert) and the search
service (search) use it."""
