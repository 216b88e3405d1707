"""`sunwell/chat`'s `images` (issue 45, item 3), over real stdio (pytest-lsp): base64 `data` or a workspace `path`,
attached to the line and sent as the provider's image (the fake checks the shape); a path out of the jail, a blocked
file, bytes that are no image and data that is no base64 are an `image_refused` notice each, and the line goes on;
an image and neither source, or both, is invalid params."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image
from pygls.exceptions import JsonRpcInvalidParams

from fake_provider import Reply
from sunwell.wire import protocol
from test_sidecar_support import check_turn

pytest_plugins = ["test_sidecar_support"]


def png_bytes(size=(24, 12)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (0, 128, 0)).save(out, "PNG")
    return out.getvalue()


def sent_images(body: dict) -> list[str]:
    return [part["image_url"]["url"] for message in body["messages"] if message["role"] == "user"
            and isinstance(message["content"], list) for part in message["content"] if part["type"] == "image_url"]


async def test_chat_takes_images_as_base64_data_and_as_a_workspace_path(sidecar, fake, workspace):
    (workspace / "shots").mkdir()
    (workspace / "shots" / "page.png").write_bytes(png_bytes((30, 10)))
    fake.script(Reply(text="two green boxes"))
    images = [{"data": base64.b64encode(png_bytes()).decode(), "mediaType": "image/png"},
              {"path": "shots/page.png", "mediaType": "image/png"}]
    result, events = await sidecar.chat("what do you see?", images=images)
    check_turn(events, result)
    assert result["status"] == "completed"
    urls = sent_images(fake.requests[-1].body)
    sizes = [Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size for url in urls]
    assert sizes == [(24, 12), (30, 10)]


async def test_bad_images_are_notices_and_the_line_goes_on(sidecar, fake, workspace, tmp_path):
    (tmp_path / "outside.png").write_bytes(png_bytes())
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "badge.png").write_bytes(png_bytes())
    fake.script(Reply(text="nothing attached"))
    images = [{"path": "../outside.png"}, {"path": "secrets/badge.png"},
              {"data": base64.b64encode(b"GIF89a but not really").decode(), "mediaType": "image/gif"},
              {"data": "%%% not base64 %%%", "mediaType": "image/png"},
              {"data": base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode(),
               "mediaType": "image/svg+xml"}]
    result, events = await sidecar.chat("look", images=images)
    assert result["status"] == "completed"
    refused = [e["message"] for e in events if e["type"] == "notice" and e["code"] == "image_refused"]
    assert len(refused) == 5, refused
    assert refused[0] == "not attached: path escapes the workspace: ../outside.png" and "blocked" in refused[1]
    assert refused[2] == "not attached: image 3 is a damaged or cut-short GIF image: it cannot be read"
    assert refused[3] == "not attached: image 4: its data is not base64"
    assert refused[4].startswith("not attached: image 5 is an SVG drawing")
    assert sent_images(fake.requests[-1].body) == [] and fake.requests[-1].body["messages"][-1]["content"] == "look"


@pytest.mark.parametrize("image", [{}, {"data": "AAAA", "path": "a.png"}])
async def test_an_image_needs_one_source(sidecar, image):
    with pytest.raises(JsonRpcInvalidParams):
        await sidecar.request(protocol.CHAT, {"text": "hi", "images": [image]})


async def test_an_image_file_mention_goes_as_an_image_and_a_replay_counts_the_lines_images(sidecar, fake, workspace):
    # The editor sends `@shot.png` as a file mention (its `@` picker): the engine attaches it as an image, not as text
    (workspace / "shot.png").write_bytes(png_bytes((16, 16)))
    fake.script(Reply(text="a green square"))
    mentions = [{"kind": "file", "label": "@shot.png", "path": "shot.png"}]
    images = [{"data": base64.b64encode(png_bytes()).decode(), "mediaType": "image/png"}]
    result, _ = await sidecar.chat("what is this?", mentions=mentions, images=images)
    assert result["status"] == "completed"
    body = fake.requests[-1].body
    assert len(sent_images(body)) == 2
    assert "<attachment" not in str(body["messages"][-1]["content"])
    # a reopened session shows that the line had images (their bytes stay in the log's image files)
    shown = await sidecar.request(protocol.SESSION, {"session": result["session"]})
    line = next(e for e in shown["events"] if e["type"] == "userMessage")
    assert line["imageCount"] == 2 and line["text"] == "what is this?"
