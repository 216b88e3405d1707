"""Issue 40, item 1: configuration an editor or a tool runs programs from, under any name it goes by.

`.vscode/` was protected, but `proj.code-workspace` (whose `settings` VS Code applies when the user opens it, an
executable path among them) was written unasked, and a command's `printf ... > x.code-workspace` was applied. The
class is protected by what a file is (a name pattern, at any depth, in any case the filesystem may fold), for
writes, edits and what commands do, at every trust level. Attacks through the real CLI, real bwrap, the sidecar."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply
from sunwell.tools.workspace.jail import Jail
from test_approval_hardening import approvals, needs_bwrap, results, user_config, write_call
from test_sidecar_support import check_turn

OPENAI = "openai:gpt-4o"
pytest_plugins = ["test_sidecar_support"]  # the `sidecar` and `sidecar_factory` fixtures

GIT_PATH = json.dumps({"folders": [{"path": "."}], "settings": {"git.path": "./tools/git.sh"}})
TEAM = '{"folders": [{"path": "."}]}\n'

PROTECTED = [
    "proj.code-workspace", "sub/deep/x.code-workspace", "PROJ.Code-Workspace", "proj.code-workspace.",
    "proj.code-workſpace",  # a long s: the same name where the filesystem folds case (NTFS, APFS)
    ".vscode/tasks.json", ".vſcode/tasks.json", "sub/.VSCODE/launch.json",
    ".devcontainer/devcontainer.json", ".devcontainer.json", "sub/devcontainer.json",
    ".devcontainer/python/devcontainer.json",
    ".idea/workspace.xml", "app.iml", "mod/core.IML", "old.ipr", "old.iws", ".run/App.run.xml", "tools/App.run.xml",
    ".fleet/run.json", ".zed/tasks.json", ".vs/tasks.vs.json", ".theia/launch.json", "site.sublime-project",
    ".exrc", ".vimrc", "sub/.nvim.lua", ".nvimrc", ".dir-locals.el", ".project", ".externalToolBuilders/b.launch",
    ".claude/settings.json", ".mcp.json", ".cursor/mcp.json", ".gemini/settings.json", ".envrc",
]  # fmt: skip
ORDINARY = [
    "src/app.py", ".editorconfig", "settings.json", "proj.code-workspace.md", "code-workspace.txt",
    "docs/devcontainer.md", ".ideas/x.txt", "vscode/readme.md", "package.json", "tsconfig.json", "app.iml.bak",
    ".github/workflows/ci.yml", "project.txt", "claude.md",
]  # fmt: skip


@pytest.mark.parametrize("rel", PROTECTED)
def test_editor_configuration_is_known_by_what_it_is(tmp_path, rel):
    assert Jail(tmp_path).is_protected(rel)


@pytest.mark.parametrize("rel", ORDINARY)
def test_ordinary_files_are_not_editor_configuration(tmp_path, rel):
    assert not Jail(tmp_path).is_protected(rel)


# ---- the model writes or edits it ---------------------------------------------------------------------------------


@pytest.mark.parametrize("trust", ["workspace", "shell", "full"])
def test_writes_and_edits_of_editor_configuration_are_never_waved_through(sunwell, fake, workspace, tmp_path,
                                                                         trust):
    user_config(tmp_path, "rate_limits: {writes_per_min: 100}\n")
    (workspace / "team.code-workspace").write_text(TEAM)
    (workspace / "sub").mkdir()
    attacks = [write_call("proj.code-workspace", GIT_PATH), write_call("sub/x.code-workspace", GIT_PATH),
               write_call("Proj.CODE-WORKSPACE", GIT_PATH), write_call(".devcontainer.json", "{}"),
               write_call("sub/devcontainer.json", '{"initializeCommand": "touch PWNED"}'),
               write_call("app.iml", "<module/>"), write_call(".fleet/run.json", "{}"),
               write_call(".zed/tasks.json", "[]"), write_call(".run/App.run.xml", "<component/>"),
               write_call(".claude/settings.json", '{"hooks": {}}'),
               Call("edit_file", json.dumps({"path": "team.code-workspace", "old_text": '"folders"',
                                             "new_text": '"settings": {"git.path": "./x.sh"}, "folders"'}))]
    fake.script(Reply(tool_calls=[*attacks, write_call("ok.txt", "fine\n")]), Reply(text="ok"))
    run = sunwell("run", "set up the editor", "--model", OPENAI, "--trust", trust, "--approve", "auto", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    assert approvals(run.events) == [("deny", "policy")] * len(attacks) + [("allow", "policy")]
    assert {r["error"]["code"] for r in results(run.events)[:-1]} == {"denied"}
    assert "always asked, and no one could be asked" in results(run.events)[0]["error"]["message"]
    for made in ("proj.code-workspace", "Proj.CODE-WORKSPACE", "sub/x.code-workspace", ".devcontainer.json",
                 "sub/devcontainer.json", "app.iml", ".fleet", ".zed", ".run", ".claude"):
        assert not (workspace / made).exists(), made
    assert (workspace / "team.code-workspace").read_text() == TEAM
    assert (workspace / "ok.txt").read_text() == "fine\n"


def test_a_workspace_file_is_not_written_through_a_link_to_it(sunwell, fake, workspace):
    (workspace / "team.code-workspace").write_text(TEAM)
    (workspace / "notes.json").symlink_to("team.code-workspace")
    fake.script(Reply(tool_calls=[write_call("notes.json", GIT_PATH)]), Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--approve", "auto", "--json")
    assert run.code == 0, run.stderr
    assert not results(run.events)[0]["ok"]
    assert (workspace / "team.code-workspace").read_text() == TEAM


# ---- a command makes or changes it --------------------------------------------------------------------------------

PLANT = ("printf '%s' > proj.code-workspace; mkdir -p sub/.devcontainer && echo '{}' > sub/devcontainer.json; "
         "echo '<module/>' > app.iml; echo '{}' > .mcp.json; echo changed > team.code-workspace; echo ok > ok.txt")


@needs_bwrap
@pytest.mark.parametrize("trust", ["shell", "full"])  # shell: staged, then applied; full: in place, with network
def test_a_command_cannot_plant_or_change_editor_configuration(sunwell, fake, workspace, trust):
    (workspace / "team.code-workspace").write_text(TEAM)
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": PLANT % GIT_PATH}))]),
                Reply(text="done"))
    run = sunwell("run", "set up", "--model", OPENAI, "--trust", trust, "--approve", "auto", "--json")
    assert run.code == 0, run.stderr
    output = next(e for e in run.events if e["type"] == "toolResult")["output"]
    for planted in ("proj.code-workspace", "sub/devcontainer.json", "app.iml", ".mcp.json"):
        assert planted in output, planted
        assert not os.path.lexists(workspace / planted), planted
    assert (workspace / "team.code-workspace").read_text() == TEAM
    assert (workspace / "ok.txt").read_text() == "ok\n"


@needs_bwrap
def test_staged_effects_refuse_editor_configuration_and_apply_the_rest(workspace, tmp_path):
    from test_effects_hardening import refused, staged

    (workspace / "team.code-workspace").write_text(TEAM)
    output, [shown] = staged(workspace, tmp_path / "data", PLANT % GIT_PATH)
    for planted in ("proj.code-workspace", "sub/devcontainer.json", "app.iml", ".mcp.json"):
        assert f"{planted} (configuration an editor or tool runs programs from)" in refused(output), planted
    assert [c["path"] for c in shown["changes"]] == ["ok.txt"]
    assert (workspace / "team.code-workspace").read_text() == TEAM and not (workspace / "proj.code-workspace").exists()
    assert (workspace / "ok.txt").read_text() == "ok\n"


# ---- the sidecar ----------------------------------------------------------------------------------------------------


async def test_the_sidecar_asks_the_client_about_editor_configuration_even_under_auto(sidecar_factory, fake,
                                                                                      workspace, tmp_path):
    sidecar = await sidecar_factory({"dataDir": str(tmp_path / "data"), "model": OPENAI, "approval": "auto"})
    sidecar.answer = lambda params: {"decision": "deny"}
    fake.script(Reply(tool_calls=[write_call("proj.code-workspace", GIT_PATH), write_call("ok.txt", "fine\n")]),
                Reply(text="ok"))
    result, events = await asyncio.wait_for(sidecar.chat("go"), 60)
    check_turn(events, result)
    assert [a["preview"]["path"] for a in sidecar.approvals] == ["proj.code-workspace"]
    assert [(e["decision"], e["by"]) for e in events if e["type"] == "approval"] == [("deny", "user"),
                                                                                     ("allow", "policy")]
    assert not (workspace / "proj.code-workspace").exists() and (workspace / "ok.txt").exists()
