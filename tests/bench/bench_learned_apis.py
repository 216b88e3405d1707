"""Learned APIs: the time to learn a 50-operation document, and what its tools take of a 4,096-token window.

    python tests/bench/bench_learned_apis.py [--runs 5] [--big 5000]

1. A PokeAPI-shaped OpenAPI 3.0 document of 50 operations (25 resources, each a list with `limit`/`offset` and a
   retrieve by id, parameters and schemas by `$ref`, a recursive schema), learned as `sunwell tools learn` does:
   parsed, validated by openapi-spec-validator, references resolved by SchemaPath, each operation made a tool, its
   hosts checked. Median of `--runs`; then once a document of `--big` operations, for scale.
2. The core tools, learn_api and the 50 learned tools offered to a model with a 4,096-token window, fitted as a turn
   fits them (models/fitting.py, the learned tools `topical`) for a request about one Pokémon: the tokens the tool
   definitions take before and after, and the learned tools' share of the window.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

RESOURCES = ["ability", "berry", "berry-firmness", "characteristic", "contest-type", "egg-group", "evolution-chain",
             "gender", "generation", "growth-rate", "item", "language", "location", "machine", "move", "nature",
             "pokedex", "pokemon", "pokemon-color", "pokemon-form", "pokemon-species", "region", "stat", "type",
             "version"]


def document(resources: list[str]) -> dict:
    paths: dict = {}
    for name in resources:
        slug = name.replace("-", "_")
        paths[f"/api/v2/{name}/"] = {"get": {
            "operationId": f"{slug}_list", "summary": f"List {name.replace('-', ' ')} resources", "tags": [name],
            "description": f"A page of {name} resources: names and URLs. Page with `limit` and `offset`; `next` "
                           "is the next page's URL.",
            "parameters": [{"$ref": "#/components/parameters/Limit"}, {"$ref": "#/components/parameters/Offset"},
                           {"$ref": "#/components/parameters/Q"}],
            "responses": {"200": {"description": "A page", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Page"}}}}}}}
        paths[f"/api/v2/{name}/{{id}}/"] = {"get": {
            "operationId": f"{slug}_retrieve", "summary": f"Get a {name.replace('-', ' ')}", "tags": [name],
            "description": f"One {name} by its name or number, with everything the API knows about it.",
            "parameters": [{"$ref": "#/components/parameters/Id"}],
            "responses": {"200": {"description": "It", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Detail"}}}}}}}
    return {
        "openapi": "3.0.3", "info": {"title": "PokeAPI", "version": "2.7.0"},
        "servers": [{"url": "https://pokeapi.co"}], "paths": paths,
        "components": {
            "parameters": {
                "Id": {"name": "id", "in": "path", "required": True, "description": "A name or a number.",
                       "schema": {"type": "string"}},
                "Limit": {"name": "limit", "in": "query", "description": "How many per page (default 20).",
                          "schema": {"type": "integer", "minimum": 1}},
                "Offset": {"name": "offset", "in": "query", "description": "Where the page starts.",
                           "schema": {"type": "integer", "minimum": 0}},
                "Q": {"name": "q", "in": "query", "description": "Filter by a part of the name.",
                      "schema": {"type": "string"}}},
            "schemas": {
                "Named": {"type": "object", "properties": {"name": {"type": "string"}, "url": {"type": "string"}}},
                "Page": {"type": "object", "properties": {"count": {"type": "integer"},
                                                           "next": {"type": "string", "nullable": True},
                                                           "results": {"type": "array",
                                                                       "items": {"$ref": "#/components/schemas/Named"}}}},
                "Detail": {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                                             "evolves_to": {"$ref": "#/components/schemas/Detail"}}}}},
    }


def learn_once(data: dict, name: str, tags: list[str] | None = None) -> tuple[float, object]:
    import json

    from sunwell.tools.learned.learning import learn
    from sunwell.tools.network.hosts import HostRules
    from sunwell.tools.network.policy import Network

    text = json.dumps(data)
    started = time.perf_counter()
    api = asyncio.run(learn(text, name, "https://pokeapi.co/openapi.json", None, Network(HostRules()), tags))
    return time.perf_counter() - started, api


def window_share(api) -> None:
    from sunwell.models.fitting import estimate_tokens, fit_tools
    from sunwell.tools.learned.registry import LearnedApis
    from sunwell.tools.registry import CORE_TOOLS

    learned = LearnedApis(Path("/nonexistent"))
    tools = [*CORE_TOOLS, learned.learn_tool(), *(learned._tool(api, op) for op in api.offered())]
    specs = [tool.spec for tool in tools]
    names = {tool.name for tool in tools if tool.source == "learned"}
    before = estimate_tokens(specs)
    kept, notes = fit_tools(specs, context_window=4096, user_text="What type is the pokemon pikachu?",
                            expendable={tool.name for tool in tools if tool.expendable}, topical=names)
    after = estimate_tokens(kept)
    mine = [spec for spec in kept if spec.name in names]
    print(f"tool definitions offered: {len(specs)} ({len(names)} learned), ~{before:,} tokens before fitting")
    print(f"after fitting to 4,096: {len(kept)} tools, ~{after:,} tokens ({after / 4096:.0%} of the window; "
          f"the budget is 25%)")
    print(f"learned tools kept: {len(mine)} ({', '.join(s.name for s in mine)}), ~{estimate_tokens(mine):,} tokens "
          f"= {estimate_tokens(mine) / 4096:.1%} of the window")
    print(f"one learned tool unfitted: ~{estimate_tokens([s for s in specs if s.name in names][:1])} tokens")
    for note in notes:
        print(f"  fitting: {note[:160]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big", type=int, default=5000)
    args = parser.parse_args()
    data = document(RESOURCES)
    learn_once(data, "pokeapi")  # imports, once
    times = []
    for _ in range(args.runs):
        seconds, api = learn_once(data, "pokeapi")
        times.append(seconds)
    print(f"learn 50 operations: median {statistics.median(times) * 1000:.0f} ms "
          f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}) over {args.runs} runs; "
          f"{len(api.operations)} tools")
    if args.big:
        big = document([f"r{i}" for i in range(args.big // 2)])
        seconds, huge = learn_once(big, "huge", ["r1"])
        print(f"learn {len(huge.operations):,} operations once: {seconds:.1f} s")
    window_share(api)


if __name__ == "__main__":
    main()
