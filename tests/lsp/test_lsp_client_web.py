"""VS Code's web settings on the sidecar (lsp/configuration.py): `network.allow` / `network.deny` from the user's
settings are added to the config's (never replacing a workspace's deny), a bad entry is reported and left out, and
`webSearch` replaces the config's search service."""

from __future__ import annotations

from sunwell.lsp.configuration import read_options, resolve_settings


def _configs(tmp_path, user: str, workspace: str = "") -> dict[str, str]:
    (tmp_path / "cfg" / "sunwell").mkdir(parents=True)
    (tmp_path / "cfg" / "sunwell" / "config.yaml").write_text(user)
    if workspace:
        (tmp_path / ".sunwell").mkdir()
        (tmp_path / ".sunwell" / "config.yaml").write_text(workspace)
    return {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "data")}


def test_the_clients_hosts_are_added_to_the_configs(tmp_path):
    env = _configs(tmp_path, "network:\n  allow: [docs.python.org]\n  max_bytes: 2000\n",
                   "network:\n  deny: [evil.example]\n")
    options, problems = read_options({"network": {"allow": ["127.0.0.1", "not a host!"], "deny": ["*.ads.example"]}},
                                     "initializationOptions")
    assert problems == []
    settings, problems = resolve_settings(tmp_path, options, env)
    assert settings.network.allow == ["docs.python.org", "127.0.0.1"]
    assert settings.network.deny == ["evil.example", "*.ads.example"]  # the workspace's deny stays
    assert settings.network.max_bytes == 2000  # what the client does not set is the config's
    assert len(problems) == 1 and "network.allow" in problems[0] and "not a host!" in problems[0]


def test_no_network_from_the_client_leaves_the_configs(tmp_path):
    env = _configs(tmp_path, "network:\n  allow: [docs.python.org]\n")
    settings, problems = resolve_settings(tmp_path, read_options({"model": "openai:gpt-4o"}, "x")[0], env)
    assert problems == [] and settings.network.allow == ["docs.python.org"]


def test_web_search_from_the_client_replaces_the_configs(tmp_path):
    env = _configs(tmp_path, "web_search:\n  provider: searxng\n  base_url: http://127.0.0.1:8888\n")
    options, _ = read_options({"webSearch": {"provider": "brave", "baseUrl": None, "apiKeyEnv": "SUNWELL_WEB_SEARCH_KEY"}}, "x")
    settings, problems = resolve_settings(tmp_path, options, env)
    assert problems == []
    assert (settings.web_search.provider, settings.web_search.api_key_env) == ("brave", "SUNWELL_WEB_SEARCH_KEY")

    options, _ = read_options({"webSearch": {"provider": "searxng", "baseUrl": None}}, "x")  # SearXNG needs its URL
    settings, problems = resolve_settings(tmp_path, options, env)
    assert settings.web_search.base_url == "http://127.0.0.1:8888"
    assert len(problems) == 1 and "webSearch" in problems[0] and "base_url" in problems[0]

