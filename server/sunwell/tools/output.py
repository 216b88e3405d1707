"""Keeping a tool's output within the byte cap, and saying so when it is cut."""

from __future__ import annotations


def char_boundary(data: bytes, n: int) -> int:
    """The largest cut point <= n that does not split a UTF-8 character."""
    n = min(n, len(data))
    while 0 < n < len(data) and (data[n] & 0xC0) == 0x80:
        n -= 1
    return n


def truncate(text: str, max_bytes: int, hint: str) -> str:
    """`text` if its UTF-8 size is within max_bytes; else its head plus a last line saying what was cut.

    The head ends at a line boundary, unless that would throw away most of the room (one huge line), in which case
    it ends at a character boundary. The result, notice included, is at most max_bytes.
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    total = len(data)
    # The notice is sized with `total` in both slots: the number shown is smaller, so it can only get shorter.
    longest_notice = _notice(total, total, hint).encode("utf-8", "surrogatepass")
    room = max_bytes - len(longest_notice) - 1  # 1 for the newline before the notice
    if room <= 0:
        return longest_notice[: char_boundary(longest_notice, max_bytes)].decode("utf-8", "surrogatepass")
    newline = data.rfind(b"\n", 0, room)
    cut = newline + 1 if newline >= room // 2 else char_boundary(data, room)
    head = data[:cut].decode("utf-8", "surrogatepass")
    separator = "" if head.endswith("\n") or not head else "\n"
    return f"{head}{separator}{_notice(cut, total, hint)}"


def _notice(shown: int, total: int, hint: str) -> str:
    return f"[output truncated: showed {shown:,} of {total:,} bytes; {hint}]"
