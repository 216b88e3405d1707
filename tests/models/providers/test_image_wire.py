"""Images at each provider's edge (issue 45, item 1), through the real `openai` and `anthropic` SDKs against the fake
provider, which checks the image shapes each API takes and refuses a malformed one with the API's own error: a
user's image and a tool result's image, as OpenAI (and Ollama's `/v1`) and Anthropic take them; and a model that
cannot see gets a line of text in their place and the user a notice, never a provider's 400."""

from __future__ import annotations

import base64
import io

import httpx2 as httpx
import pytest
from PIL import Image

from fake_provider import Call, FakeProvider, Reply
from sunwell.config.settings import ImageSettings
from sunwell.model_strings import parse_model_string
from sunwell.models.base import ModelRequest, Notice, ProviderError, TextDelta
from sunwell.models.capabilities import capabilities_for
from sunwell.models.factory import provider_for
from sunwell.models.providers.anthropic_messages import AnthropicMessages
from sunwell.models.providers.openai_chat import OpenAIChat
from sunwell.models.vision import UNSEEN
from sunwell.tools.images import prepare
from sunwell.wire.base import TextPart
from sunwell.wire.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from sunwell.wire.results import ImagePart


def png_part(color=(255, 0, 0)) -> ImagePart:
    out = io.BytesIO()
    Image.new("RGB", (32, 16), color).save(out, "PNG")
    return prepare(out.getvalue(), ImageSettings())


SHOT, PLOT = png_part(), png_part((0, 0, 255))
CALL = ToolCall(id="call_1", name="read_file", arguments={"path": "plot.png"})


def conversation() -> list:
    result = ToolResultMessage.of("call_1", "read_file", [TextPart(text="plot.png: a PNG image, 32×16 pixels"), PLOT])
    return [UserMessage(text="what is wrong here?", images=[SHOT]), AssistantMessage(tool_calls=[CALL]), result]


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


async def answer(provider, messages, model="gpt-4o") -> list:
    request = ModelRequest(model=model, system="terse", messages=messages)
    return [event async for event in provider.stream(request)]


async def test_openai_gets_the_users_image_as_an_image_url_and_a_results_image_in_a_user_message_after(fake):
    fake.script(Reply(text="the axis is upside down"))
    await answer(OpenAIChat(base_url=f"{fake.url}/v1", api_key="k"), conversation())
    messages = fake.requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "what is wrong here?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{SHOT.data}", "detail": "high"}}]
    assert messages[3]["content"] == ("plot.png: a PNG image, 32×16 pixels\n[image: image/png, 32×16, about "
                                      f"{len(PLOT.data) * 3 // 4} bytes] (image 1 of the next message)")
    assert messages[4]["content"] == [
        {"type": "text", "text": "[The images the tool results above returned, in order]"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PLOT.data}", "detail": "high"}}]


async def test_anthropic_gets_image_blocks_in_the_user_turn_and_in_the_tool_result(fake):
    fake.script(Reply(text="the axis is upside down"))
    await answer(AnthropicMessages(base_url=fake.url, api_key="k"), conversation(), "claude-sonnet-4-5")
    turns = fake.requests[-1].body["messages"]
    assert turns[0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": SHOT.data}},
        {"type": "text", "text": "what is wrong here?"}]
    [result] = turns[2]["content"]
    assert result["content"] == [
        {"type": "text", "text": "plot.png: a PNG image, 32×16 pixels"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PLOT.data}}]


@pytest.mark.parametrize(("body", "said"), [
    ({"role": "tool", "tool_call_id": "x", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
     "Image URLs are only allowed for messages with role 'user'"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/svg+xml;base64,PHN2Zz4="}}]},
     "unsupported MIME type 'image/svg+xml'"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,bm90IGFuIGltYWdl"}}]},
     "You uploaded an unsupported image"),
])
def test_the_fake_refuses_what_openai_refuses(fake, body, said):
    messages = [body] if body["role"] == "user" else [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "type": "function",
                                                               "function": {"name": "f", "arguments": "{}"}}]}, body]
    answered = httpx.post(f"{fake.url}/v1/chat/completions", json={"model": "m", "messages": messages})
    assert answered.status_code == 400 and said in answered.json()["error"]["message"]


async def test_the_fake_refuses_an_anthropic_image_that_lies_about_its_type(fake):
    jpeg = io.BytesIO()
    Image.new("RGB", (8, 8)).save(jpeg, "JPEG")
    lying = ImagePart(media_type="image/png", data=base64.b64encode(jpeg.getvalue()).decode())
    with pytest.raises(ProviderError) as refused:
        await answer(AnthropicMessages(base_url=fake.url, api_key="k"), [UserMessage(text="see", images=[lying])])
    assert "media type, but the image appears to be a image/jpeg image" in str(refused.value)


async def test_a_model_that_cannot_see_reads_a_line_and_the_user_is_told_once(fake):
    spec = parse_model_string("openai:gpt-3.5-turbo")
    caps = capabilities_for(spec.model, spec.provider)
    assert not caps.vision and capabilities_for("gpt-4o", "openai").vision
    stack = provider_for(spec, caps, adapter=OpenAIChat(base_url=f"{fake.url}/v1", api_key="k"), window=16_000,
                         estimate=lambda request: 100)
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "plot.png"}')]), Reply(text="I cannot see it"))
    first = await answer(stack.turn, conversation()[:1], spec.model)
    second = await answer(stack.turn, conversation(), spec.model)
    notices = [e for e in first + second if isinstance(e, Notice)]
    assert [(n.code, n.level) for n in notices] == [("images_not_seen", "warning")] * 2  # the line's, the result's
    assert notices[0].message.startswith("1 image not shown to openai:gpt-3.5-turbo, which cannot see images")
    assert any(isinstance(e, TextDelta) for e in second)
    sent = fake.requests[-1].body["messages"]
    assert sent[1] == {"role": "user", "content": f"what is wrong here?\n\n{UNSEEN}"}
    assert sent[3]["content"] == f"plot.png: a PNG image, 32×16 pixels\n{UNSEEN}" and len(sent) == 4
    assert "image_url" not in str(sent)


@pytest.mark.parametrize("model", ["ollama:llava:7b", "ollama:qwen2.5:7b"])
def test_an_override_says_a_model_sees(model):
    spec = parse_model_string(model)
    assert capabilities_for(spec.model, spec.provider).vision == (model == "ollama:llava:7b")
    assert capabilities_for(spec.model, spec.provider, {model: {"vision": True}}).vision
    assert not capabilities_for(spec.model, spec.provider, {model: {"vision": False}}).vision
