"""OAuth sign-in through the real CLI: `sunwell mcp login` with a browser the tests provide (`BROWSER`, run by
`webbrowser` with an argv), the stored sign-in used by `sunwell run`, `sunwell mcp logout`; and the attack of a
token that would reach a log: after it all, no file Sunwell wrote (config, sessions, audit, logs) and nothing it
printed or sent the model holds a token, a refresh token, a code or a client secret, even from a server that echoes
its bearer token in a tool result."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply
from mcp_support import OAuthBox, write_user_config
from test_approvals import Terminal

KEEP_OFF_THE_KEYRING = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}


@pytest.fixture
def browser(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """`BROWSER` for `webbrowser`: a program that follows the URL it is given, noting each visit in a log."""
    visits = tmp_path / "visits.log"
    program = tmp_path / "browser"
    program.write_text(f"#!{sys.executable}\n"
                       "import sys, httpx2\n"
                       "answer = httpx2.get(sys.argv[1], follow_redirects=True, timeout=20)\n"
                       f"open({str(visits)!r}, 'a').write(f'{{answer.status_code}} {{sys.argv[1]}}\\n')\n")
    program.chmod(0o755)
    return {"BROWSER": str(program), **KEEP_OFF_THE_KEYRING}, visits


def test_login_run_logout_and_no_token_reaches_a_file_a_log_or_the_model(sunwell, fake, env, tmp_path, browser):
    extra, visits = browser
    config_home, data = Path(env["XDG_CONFIG_HOME"]), Path(env["SUNWELL_DATA_DIR"])
    with OAuthBox("--issue-secrets") as box:
        write_user_config(config_home, mcp_servers={"guarded": {"url": box.url, "timeout": 10}})
        login = sunwell("mcp", "login", "guarded", extra_env=extra)
        assert login.code == 0, login.stderr
        assert login.stdout.strip() == f"guarded is signed in (2 tools); the sign-in is kept in {data / 'mcp-oauth.json'}"
        assert "asks you to sign in (OAuth): your browser was opened at http://127.0.0.1:" in login.stderr
        assert visits.read_text().startswith("200 http://127.0.0.1:")

        fake.script(Reply(text="Let me look.", tool_calls=[Call("guarded__whoami", "{}")]), Reply(text="Done."))
        run = sunwell("run", "who am I there?", "--model", "openai:gpt-4o", "--json", "--trust", "full", "--yes",
                      extra_env=extra)
        assert run.code == 0, run.stderr
        result = next(e for e in run.events if e["type"] == "toolResult")
        assert result["ok"] and result["output"] == "client client-1 with token [REDACTED]"
        again = sunwell("mcp", "list", extra_env=extra)
        assert "guarded  running" in again.stdout
        assert len(visits.read_text().splitlines()) == 1  # no browser after the first sign-in

        secrets = box.secrets()
        assert len(secrets) >= 4  # client secret, code, access and refresh token
        vault = data / "mcp-oauth.json"
        assert stat.S_IMODE(vault.stat().st_mode) == 0o600
        assert sum(s in vault.read_text() for s in secrets) >= 3  # the search finds them where they are kept
        said = [login.stdout, login.stderr, run.stdout, run.stderr, again.stdout, again.stderr,
                *(json.dumps(request.body) for request in fake.requests)]
        leaks = [(where, s) for where, text in [*_files_text(tmp_path, but=vault), *enumerate(said)]
                 for s in secrets if s in text]
        assert leaks == []

        logout = sunwell("mcp", "logout", "guarded", extra_env=extra)
        assert logout.code == 0 and logout.stdout.strip() == f"forgot the sign-in of guarded (its tokens and " \
                                                              f"registration) in {vault}"
        assert not any(s in vault.read_text() for s in secrets)
        after = sunwell("mcp", "list", extra_env=KEEP_OFF_THE_KEYRING)  # no browser: no one to sign in
        assert "failed: could not start: it asks you to sign in (OAuth) and no one is here to: run `sunwell mcp " \
               "login guarded`" in after.stdout
        unknown = sunwell("mcp", "login", "nothing", extra_env=extra)
        assert unknown.code == 2 and "no MCP server 'nothing' with a url is configured (with a url: guarded)" \
            in unknown.stderr


def _files_text(root: Path, but: Path) -> list[tuple[str, str]]:
    """Every file under `root` (config, data dir with sessions.db and its WAL, audit, workspace), as text."""
    return [(str(path), path.read_bytes().decode("utf-8", "replace")) for path in root.rglob("*")
            if path.is_file() and path != but]


def test_a_person_at_the_terminal_signs_in_during_the_turn(fake, env, workspace, browser):
    extra, visits = browser
    with OAuthBox() as box:
        write_user_config(Path(env["XDG_CONFIG_HOME"]), mcp_servers={"guarded": {"url": box.url, "timeout": 10}})
        fake.script(Reply(tool_calls=[Call("guarded__echo", '{"text": "hi"}')]), Reply(text="Done."))
        term = Terminal({**env, **extra}, workspace, "say hi there", "--model", "openai:gpt-4o", "--trust", "full",
                        "--yes", "--json")
        code, out = term.finish()
        assert code == 0, term.screen
        events = [json.loads(line) for line in out.splitlines()]
        check_stream_rules(events)
        asked = next(e for e in events if e["type"] == "notice" and e["code"] == "mcp_auth")
        assert asked["seq"] == 0 and "your browser was opened at http://127.0.0.1:" in asked["message"]
        assert visits.read_text().startswith("200 ")
        assert next(e for e in events if e["type"] == "toolResult")["output"] == "hi"
