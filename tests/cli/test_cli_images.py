"""Images from the terminal (issue 45, item 3), end to end: `sunwell run --image FILE` and `@shot.png` in a prompt,
a real subprocess, the real SDKs, the fake provider checking each API's image shapes. And the red team: a path out of
the workspace via `@`, an image in a blocked folder, an SVG, a truncated PNG; the session log keeping each image once
by its hash, read back on the next turn; `::context` counting the image's tokens."""

from __future__ import annotations

import base64
import io
import json
import sqlite3
from pathlib import Path

from PIL import Image

from fake_provider import Reply

OPENAI = "openai:gpt-4o"
ANTHROPIC = "anthropic:claude-sonnet-4-5"


def png(path: Path, size=(40, 30), gps: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    exif = Image.Exif()
    if gps:
        exif.get_ifd(0x8825).update({1: "N", 2: (48.0, 51.0, 29.0)})
    Image.new("RGB", size, (200, 30, 30)).save(path, "PNG", exif=exif.tobytes() if gps else b"")
    return path


def user_images(body: dict) -> list[str]:
    """The data URLs of the images in the request's user messages (OpenAI's shape)."""
    return [part["image_url"]["url"] for message in body["messages"] if message["role"] == "user"
            and isinstance(message["content"], list) for part in message["content"] if part["type"] == "image_url"]


def notices(run) -> list[tuple[str, str]]:
    return [(e["code"], e["message"]) for e in run.events if e["type"] == "notice"]


def test_image_flag_attaches_each_file_to_the_prompt_without_its_metadata(sunwell, fake, tmp_path):
    shot = png(tmp_path / "Desktop" / "shot.png", gps=True)
    other = png(tmp_path / "other.png", size=(3000, 100))
    fake.script(Reply(text="a red box"))
    run = sunwell("run", "what is this?", "--image", str(shot), "--image", str(other), "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    urls = user_images(fake.requests[-1].body)
    assert len(urls) == 2 and all(url.startswith("data:image/png;base64,") for url in urls)
    first = Image.open(io.BytesIO(base64.b64decode(urls[0].split(",", 1)[1])))
    assert first.size == (40, 30) and not first.getexif().get_ifd(0x8825) and "exif" not in first.info
    assert Image.open(io.BytesIO(base64.b64decode(urls[1].split(",", 1)[1]))).size == (1568, 52)


def test_a_missing_image_file_stops_before_any_turn(sunwell, fake):
    run = sunwell("run", "look", "--image", "nowhere.png", "--model", OPENAI)
    assert run.code == 2 and "--image nowhere.png: No such file or directory" in run.stderr
    assert fake.requests == []


def test_at_mention_of_an_image_attaches_the_image_not_its_bytes_as_text(sunwell, fake, workspace):
    png(workspace / "shots" / "shot.png")
    fake.script(Reply(text="a red box"))
    run = sunwell("run", "what is in @shots/shot.png?", "--model", ANTHROPIC, "--json")
    assert run.code == 0, run.stderr
    [turn] = fake.requests[-1].body["messages"]
    assert [block["type"] for block in turn["content"]] == ["image", "text"]
    assert turn["content"][1]["text"] == "what is in @shots/shot.png?"  # no binary attachment block


def test_the_red_team_outside_blocked_svg_and_truncated(sunwell, fake, workspace, tmp_path):
    png(tmp_path / "outside.png")
    png(workspace / "secrets" / "badge.png")
    (workspace / "logo.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    cut = png(tmp_path / "cut.png", size=(300, 300))
    cut.write_bytes(cut.read_bytes()[:300])
    svg = workspace / "logo.svg"
    fake.script(Reply(text="nothing to see"))
    run = sunwell("run", "look at @../outside.png and @secrets/badge.png", "--image", str(svg), "--image", str(cut),
                  "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    body = fake.requests[-1].body
    assert user_images(body) == [] and body["messages"][-1]["content"] == "look at @../outside.png and @secrets/badge.png"
    assert notices(run) == [
        ("image_refused", (f"not attached: {svg} is an SVG drawing, which is text, not an image Sunwell sends: export it "
                          "as PNG to show it, or read it as text")),
        ("image_refused", f"not attached: {cut} is a damaged or cut-short PNG image: it cannot be read")]
    assert run.events[-1]["status"] == "completed"  # the line went on without them


def test_the_log_keeps_an_image_once_by_its_hash_and_the_next_turn_sends_it_again(sunwell, fake, tmp_path):
    shot = png(tmp_path / "shot.png")
    fake.script(Reply(text="a red box"), Reply(text="still red"))
    first = sunwell("run", "what is this?", "--image", str(shot), "--model", OPENAI, "--json")
    session = first.events[-1]["session"]
    second = sunwell("run", "and now?", "--session", session, "--model", OPENAI, "--json")
    assert second.code == 0, second.stderr
    assert user_images(fake.requests[-1].body) == user_images(fake.requests[0].body) != []
    files = list((tmp_path / "data" / "images").iterdir())
    assert len(files) == 1 and len(files[0].stem) == 64  # a SHA-256
    rows = sqlite3.connect(tmp_path / "data" / "sessions.db").execute("SELECT data FROM events").fetchall()
    assert not any(files[0].read_bytes()[:8].hex() in (row[0] or "") for row in rows)
    [user] = [json.loads(row[0]) for row in rows if row[0] and '"role":"user"' in row[0] and "what is" in row[0]]
    assert user["images"][0]["data"] == "" and user["images"][0]["sha256"] == files[0].stem


def test_context_counts_the_image_by_the_providers_rule(sunwell, fake, tmp_path):
    shot = png(tmp_path / "shot.png", size=(1024, 1024))
    fake.script(Reply(text="a red box"))
    first = sunwell("run", "what is this?", "--image", str(shot), "--model", ANTHROPIC, "--json")
    session = first.events[-1]["session"]
    context = sunwell("run", "::context", "--session", session, "--model", ANTHROPIC)
    assert context.code == 0, context.stderr
    assert "1 (~1,399 tokens, counted as anthropic counts them)" in context.stdout  # ⌈1024 × 1024 / 750⌉
