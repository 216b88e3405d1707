"""Lenses in a real turn: instructions, skills as tools, and a policy that only narrows."""

from __future__ import annotations

from conftest import check_stream_rules
from fake_provider import Call, Reply

OPENAI = "openai:gpt-4o"

LENS = """\
name: tester
description: Runs things carefully.
instructions: Always cite file names.
skills:
  - name: shout
    description: Echo a word loudly.
    command: echo {word} | tr a-z A-Z
    parameters:
      type: object
      properties:
        word: {type: string, description: the word}
      required: [word]
  - name: summarize
    description: Summarize a text.
    instructions: Summarize in five words.
    parameters:
      type: object
      properties:
        text: {type: string}
      required: [text]
tool_policy:
  trust_level: shell
  allowed_tools: [read_file, shout, summarize]
"""


def test_skills_run_and_policy_narrows(sunwell, fake, workspace):
    (workspace / "tester.lens").write_text(LENS)
    fake.script(Reply(tool_calls=[Call("shout", '{"word": "hi; rm -rf x"}'), Call("summarize", '{"text": "long"}'),
                                  Call("write_file", '{"path": "x", "content": "y"}')]),
                Reply(text="Five words exactly right here."),  # the nested model call of `summarize`
                Reply(text="done"))
    run = sunwell("apply", "tester", "go", "--model", OPENAI, "--yes", "--trust", "full", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    first = fake.requests[0].body
    assert {t["function"]["name"] for t in first["tools"]} == {"read_file", "shout", "summarize"}
    assert "Always cite file names." in first["messages"][0]["content"]
    results = {e["name"]: e for e in run.events if e["type"] == "toolResult"}
    assert "HI; RM -RF X" in results["shout"]["output"]  # the argument was quoted, not run
    assert results["summarize"]["output"] == "Five words exactly right here."
    assert results["write_file"]["error"]["code"] == "permission"
    assert not (workspace / "x").exists()


def test_a_lens_with_errors_is_not_activated(sunwell, fake, workspace):
    (workspace / "bad.lens").write_text("name: bad\ndescription: x\ntool_policy:\n  trust_level: root\n")
    run = sunwell("run", "go", "--lens", "bad.lens", "--model", OPENAI)
    assert run.code == 2
    assert "bad.lens:4:" in run.stderr and fake.requests == []


def test_lens_check_prints_positions(sunwell, workspace):
    (workspace / "bad.lens").write_text("name: bad\ndescription: x\nskils: []\n")
    run = sunwell("lens", "check", "bad.lens")
    assert run.code == 1 and run.stdout.startswith("bad.lens:3:1: error:")
    (workspace / "good.lens").write_text("name: good\ndescription: fine\n")
    assert sunwell("lens", "check", "good.lens").code == 0
