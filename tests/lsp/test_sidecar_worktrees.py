"""Worktree sessions through the sidecar over real stdio: two at once in two worktrees, `sunwell/worktrees`,
`sunwell/worktreeAction` (merge, discard, continue), the `max_running` cap, a workspace that is not git."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from fake_provider import Call, Reply
from test_sidecar_support import OPENAI, start_sidecar, stop_sidecar
from test_worktrees import git, hostile_repo, no_hook_ran

pytest_plugins = ["test_sidecar_support"]
WORKTREES, ACTION = "sunwell/worktrees", "sunwell/worktreeAction"


def options(tmp_path: Path, **more) -> dict:
    return {"dataDir": str(tmp_path / "data"), "model": OPENAI, "approval": "auto", **more}


def by_task(body: dict) -> Reply:
    """Each turn writes the file its line names, then answers: the two turns' requests may come in any order."""
    said = json.dumps(body["messages"])
    task = "one" if "task one" in said else "two"
    if '"role": "tool"' in said:
        return Reply(text=f"wrote {task}")
    return Reply(tool_calls=[Call("write_file", json.dumps({"path": f"{task}.txt", "content": f"{task}\n"}))])


@pytest.fixture
async def repo_sidecar(env, tmp_path):
    repo = hostile_repo(tmp_path)
    started = []

    async def start(**more):
        sidecar = await start_sidecar(env, repo, options(tmp_path, **more))
        started.append(sidecar)
        return sidecar

    yield repo, start
    for sidecar in started:
        await stop_sidecar(sidecar)


async def test_two_worktree_sessions_run_at_once_and_come_back_as_branches(repo_sidecar, fake, tmp_path):
    repo, start = repo_sidecar
    sidecar = await start()
    fake.script(*[by_task] * 4)
    (first, _), (second, _) = await asyncio.gather(sidecar.chat("task one", worktree="one"),
                                                   sidecar.chat("task two", worktree="two"))
    assert (first["status"], second["status"]) == ("completed", "completed")
    assert first["session"] != second["session"]
    assert git(repo, "show", "sunwell/one:one.txt") == "one" and git(repo, "show", "sunwell/two:two.txt") == "two"
    assert not (repo / "one.txt").exists() and git(repo, "status", "--porcelain") == ""
    rows = {row["name"]: row for row in (await sidecar.request(WORKTREES, {}))["worktrees"]}
    assert {name: (row["state"], row["session"], row["branch"]) for name, row in rows.items()} == {
        "one": ("done", first["session"], "sunwell/one"), "two": ("done", second["session"], "sunwell/two")}
    # what a review compares the branch with: the commit it was made from, not where its base branch is now
    assert rows["one"]["baseCommit"] == git(repo, "rev-parse", "HEAD")

    fake.script(Reply(text="still here"))
    again, _ = await sidecar.chat("task one, go on", worktree="one")
    assert again["session"] == first["session"]  # continued
    continued = await sidecar.request(ACTION, {"name": "one", "action": "continue"})
    assert continued["worktree"]["session"] == first["session"]

    merged = await sidecar.request(ACTION, {"name": "one", "action": "merge"})
    assert merged["worktree"]["state"] == "merged" and "fast-forward" in merged["message"]
    assert (repo / "one.txt").read_text() == "one\n"
    discarded = await sidecar.request(ACTION, {"name": "two", "action": "discard"})
    assert not Path(discarded["worktree"]["path"]).exists() and "sunwell/two" not in git(repo, "branch")
    assert [row["name"] for row in (await sidecar.request(WORKTREES, {}))["worktrees"]] == ["one"]
    no_hook_ran(tmp_path)


async def test_max_running_refuses_one_more_worktree_turn_with_a_clear_message(repo_sidecar, fake, tmp_path):
    _, start = repo_sidecar
    (tmp_path / "config" / "sunwell").mkdir(parents=True)
    (tmp_path / "config" / "sunwell" / "config.yaml").write_text("worktrees: {max_running: 1}\n")
    sidecar = await start()
    fake.script(Reply(text="a slow answer", delay=0.1, chunk=1), Reply(text="later"))
    slow = asyncio.ensure_future(sidecar.chat("a slow one", worktree="slow"))
    await sidecar.wait_for(lambda: any(e["type"] == "text" for e in sidecar.events))
    with pytest.raises(JsonRpcException, match=r"1 worktree sessions are running \(worktrees.max_running: 1\)"):
        await sidecar.request("sunwell/chat", {"text": "another", "worktree": "other"})
    result, _ = await slow
    assert result["status"] == "completed"
    done, _ = await sidecar.chat("now it may", worktree="other")
    assert done["status"] == "completed"


async def test_conflicts_hostile_names_and_dirty_discards_are_refused_in_one_line(repo_sidecar, fake, tmp_path):
    repo, start = repo_sidecar
    sidecar = await start()
    with pytest.raises(JsonRpcInvalidParams, match="invalid worktree name"):
        await sidecar.request("sunwell/chat", {"text": "hi", "worktree": "../../etc"})
    with pytest.raises(JsonRpcInvalidParams, match="action"):
        await sidecar.request(ACTION, {"name": "x", "action": "explode"})
    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "a.txt", "content": "theirs\n"}))]),
                Reply(text="done"))
    await sidecar.chat("change a", worktree="clash")
    (repo / "a.txt").write_text("mine\n")
    git(repo, "commit", "-q", "-am", "mine")
    with pytest.raises(JsonRpcException, match="conflicts in a.txt: nothing was changed"):
        await sidecar.request(ACTION, {"name": "clash", "action": "merge"})
    [row] = (await sidecar.request(WORKTREES, {}))["worktrees"]
    (Path(row["path"]) / "draft.txt").write_text("unsaved\n")
    with pytest.raises(JsonRpcException, match="uncommitted change"):
        await sidecar.request(ACTION, {"name": "clash", "action": "discard"})
    assert Path(row["path"]).exists()
    await sidecar.request(ACTION, {"name": "clash", "action": "discard", "force": True})
    assert not Path(row["path"]).exists()


async def test_a_workspace_that_is_not_git_says_so(sidecar_factory, tmp_path):
    sidecar = await sidecar_factory()
    with pytest.raises(JsonRpcException, match="is not in a git repository: worktree sessions need one"):
        await sidecar.request(WORKTREES, {})
    with pytest.raises(JsonRpcException, match="is not in a git repository"):
        await sidecar.request("sunwell/chat", {"text": "hi", "worktree": "x"})


async def test_worktree_base_starts_a_new_worktree_from_the_branch_named(repo_sidecar, fake, tmp_path):
    repo, start = repo_sidecar
    git(repo, "branch", "older", "HEAD")
    (repo / "newer.txt").write_text("newer\n")
    git(repo, "add", "newer.txt")
    git(repo, "commit", "-q", "-m", "newer on main")
    sidecar = await start()
    with pytest.raises(JsonRpcException, match="unknown base 'nope'"):
        await sidecar.request("sunwell/chat", {"text": "hi", "worktree": "x", "worktreeBase": "nope"})
    fake.script(Reply(text="looked"))
    await sidecar.chat("look", worktree="old", worktreeBase="older")
    [row] = (await sidecar.request(WORKTREES, {}))["worktrees"]
    assert row["base"] == "older" and row["baseCommit"] == git(repo, "rev-parse", "older")
    assert not (Path(row["path"]) / "newer.txt").exists() and (repo / "newer.txt").exists()


def serve(body: dict) -> Reply:
    """Each session starts the project's dev server the way its README would: on $PORT, else the usual 8000."""
    said = json.dumps(body["messages"])
    if '"role": "tool"' in said:
        return Reply(text="serving")
    command = 'exec python3 -m http.server "${PORT:-8000}" --bind 127.0.0.1'
    return Reply(tool_calls=[Call("run_command", json.dumps({"command": command, "background": True,
                                                             "wait_for": "Serving HTTP", "timeout": 20}))])


async def test_two_worktree_sessions_servers_get_ports_of_their_own(repo_sidecar, fake, tmp_path):
    """With the machine's network (trust full: no namespace of its own), both servers would ask for 8000."""
    _, start = repo_sidecar
    sidecar = await start(trust="full")
    fake.script(*[serve] * 4)
    (first, _), (second, _) = await asyncio.gather(
        sidecar.chat("serve one", worktree="one"), sidecar.chat("serve two", worktree="two"))
    assert (first["status"], second["status"]) == ("completed", "completed")
    ports = []
    for result in (first, second):
        seen = await sidecar.wait_for(lambda result=result: [
            e for e in sidecar.events if e["type"] == "process" and e["session"] == result["session"] and e["ports"]])
        assert seen[-1]["state"] == "running", seen
        ports.append(seen[-1]["ports"][0])
    assert ports[0] != ports[1] and all(41000 <= port < 43000 for port in ports), ports
    systems = [json.dumps(request.body["messages"][0]) for request in fake.requests]
    assert all("every command gets PORT=" in system and "worktree" in system for system in systems)
    assert {port for port in ports} == {int(s.split("PORT=")[1][:5]) for s in systems}
