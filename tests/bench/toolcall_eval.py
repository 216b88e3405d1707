"""Tool-calling accuracy against a real local model, through Sunwell's own pipeline and as a naive client.

    python tests/bench/toolcall_eval.py --base-url http://127.0.0.1:18090/v1 --model qwen2.5-coder-0.5b \
        [--sets simple_python,multiple] [--limit 50] [--modes sunwell,naive] [--out results.json]

Cases come from the Berkeley Function Calling Leaderboard (`pip install --no-deps bfcl-eval`, or `--data DIR`
pointing at its `bfcl_eval/data`); `own_irrelevance` and `own_irrelevance_heldout` are the project's own
questions that no offered function answers (`irrelevance_cases.yaml`), where the right reply is text and any
call is wrong (as for BFCL's `irrelevance`). Their schemas are converted to JSON Schema (`dict` -> `object`, `float` ->
`number`, `tuple` -> `array`, `any` -> no type; no parameters beyond the declared ones, as for a Python
function) and dots in function names become `_`.

`sunwell` mode offers each case's functions as tools to a real turn (`sunwell.agent.loop.Turn`), planned as the
engine plans one (`sunwell.agent.plan.plan_turn`) and sent through the engine's provider stack for this model
(`Engine.provider_stack`), with the dry-run gate, so nothing runs: the first call that passes validation is the answer (the turn is stopped there). A call that fails
validation is answered with the loop's own error and the model may correct itself, for up to `--rounds` calls.
`sunwell-free` is the same with constrained decoding turned off for the model (`constrained: false`), as the
product runs on a server that takes no schema. `naive` mode is a client that sends the same question and tools
natively with the raw `openai` SDK and reads only `tool_calls`. `anchor` mode is the model's own ceiling: the same
request as `naive` (the server's chat template for the model, with the tools in it), read leniently: native
`tool_calls`, else every JSON object with a `name` and `arguments` in the reply's text; its first call is the
answer. All sample at the temperature Sunwell sends for the model (0 for a small one) unless `--temperature` says
otherwise. `--compare` lists the cases the anchor gets right and Sunwell does not, each with a class of miss.

The checker follows BFCL's AST checker, without its dependencies: the function name must match; every required
parameter must be present; each given parameter must be known and its value among the possible answers (strings
compared without case, spaces and `,./-_*^`; an int accepted for a float); a parameter missing from the call is
fine only when its possible answers include "".

Metrics per set and mode: tool selection (right function), parameter accuracy (right arguments, among the cases
with the right function), first-attempt success (the turn's first call fully right), repairs (notices of
repaired or recovered calls), overall accuracy (the answer fully right).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

# `SUNWELL_SERVER=DIR`: run another tree's engine on the same cases (toolcall_ab.py compares two side by side)
sys.path.insert(0, os.environ.get("SUNWELL_SERVER") or str(Path(__file__).resolve().parents[2] / "server"))

from sunwell.agent.compaction import Summariser
from sunwell.agent.engine import Engine
from sunwell.agent.gate import Gate
from sunwell.agent.loop import Turn, TurnConfig
from sunwell.agent.plan import plan_turn
from sunwell.agent.turn import TurnLog
from sunwell.config import Settings
from sunwell.models.capabilities import capabilities_for
from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.tools.validation import coerce_arguments
from sunwell.tools.workspace.jail import Jail
from sunwell.vocabulary import canonical_tool_name
from sunwell.wire.messages import UserMessage

SETS = ("simple_python", "multiple")
"""The default sets; `parallel`, `live_simple`, `live_multiple`, `live_parallel`, `irrelevance` and
`live_irrelevance` are read as well."""
OWN_IRRELEVANCE = Path(__file__).with_name("irrelevance_cases.yaml")
OWN_SETS = ("own_irrelevance", "own_irrelevance_heldout")
"""Questions no offered function answers (the right reply calls nothing): the tuning split and the held-out one."""
REPAIR_NOTICES = {"tool_call_repaired", "tool_call_from_text", "repaired_arguments", "coerced_arguments",
                  "repaired_tool_name", "emulation_fallback"}
_TYPES = {"dict": "object", "float": "number", "tuple": "array"}
_PY_TYPES = {"integer": int, "float": float, "string": str, "boolean": bool, "array": list, "tuple": list,
             "dict": dict}


# --- the cases ----------------------------------------------------------------------------------------------

@dataclass
class Case:
    id: str
    set: str
    question: str
    functions: list[dict[str, Any]]
    """As BFCL gives them (original types), names already converted."""
    answers: list[dict[str, dict[str, list[Any]]]]
    """`[{function_name: {param: [possible values]}}]`; one entry for simple and multiple, one per call for the
    parallel sets (each must be made, by a call of its own, in any order), none for irrelevance (the right reply
    calls no function)."""

    @property
    def expected(self) -> str:
        return next(iter(self.answers[0])) if self.answers else ""

    @property
    def tools(self) -> list[Tool]:
        return [Tool(name=f["name"], description=f.get("description", ""), parameters=parameters_schema(
            f["parameters"]), handler=_never_run if len(self.answers) < 2 else _recorded, min_trust=Trust.read_only)
            for f in self.functions]


async def _never_run(arguments: dict[str, Any], ctx: ToolContext) -> str:
    raise ToolFailure("execution", "benchmark tools are never executed")


async def _recorded(arguments: dict[str, Any], ctx: ToolContext) -> str:
    """A parallel case's tool: the call is answered as done, so a model that calls one per reply goes on to the next
    (a dry run's "not executed" has it call the same again)."""
    return "done"


def tool_name(name: str) -> str:
    return name.replace(".", "_")


def parameters_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """A function's parameters as a tool schema. A Python function takes no keywords it does not declare, so
    unknown arguments are invalid (`additionalProperties: false`, as on Sunwell's own tools)."""
    return {**to_json_schema(parameters), "additionalProperties": False}


def to_json_schema(schema: Any) -> Any:
    """BFCL's Python-flavoured schema as JSON Schema."""
    if isinstance(schema, list):
        return [to_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            if value == "any":
                continue
            out[key] = _TYPES.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key == "optional":
            continue  # BFCL's own marker; `required` says the same
        else:
            out[key] = to_json_schema(value)
    return out


def data_dir(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    if os.environ.get("BFCL_DATA"):
        return Path(os.environ["BFCL_DATA"])
    spec = importlib.util.find_spec("bfcl_eval")  # located, never imported: its __init__ wants many packages
    if spec is None or spec.origin is None:
        sys.exit("bfcl-eval data not found: `pip install --no-deps bfcl-eval`, or pass --data DIR")
    return Path(spec.origin).parent / "data"


def load_cases(root: Path, name: str, limit: int | None) -> list[Case]:
    if name in OWN_SETS:
        return spread(own_irrelevance(name), limit)
    questions = _jsonl(root / f"BFCL_v4_{name}.json")
    if "irrelevance" in name:  # no call is the right answer: BFCL ships no possible answers for these
        answers = {row["id"]: [] for row in questions}
    else:
        answers = {row["id"]: row["ground_truth"]
                   for row in _jsonl(root / "possible_answer" / f"BFCL_v4_{name}.json")}
    cases = []
    for row in questions:
        functions = [{**f, "name": tool_name(f["name"])} for f in row["function"]]
        question = "\n".join(m["content"] for turn in row["question"] for m in turn if m["role"] == "user")
        truth = [{tool_name(fn): params for fn, params in entry.items()} for entry in answers[row["id"]]]
        cases.append(Case(row["id"], name, question, functions, truth))
    return spread(cases, limit)


def own_irrelevance(name: str) -> list[Case]:
    """The project's own irrelevance cases (`irrelevance_cases.yaml`): every third one is the held-out split."""
    data = yaml.safe_load(OWN_IRRELEVANCE.read_text(encoding="utf-8"))
    heldout = name.endswith("_heldout")
    cases = []
    for row in data["cases"]:
        if (int(row["id"].rsplit("_", 1)[1]) % 3 == 0) != heldout:
            continue
        functions = [{"name": tool, **data["functions"][tool]} for tool in row["tools"]]
        cases.append(Case(row["id"], name, row["question"], functions, []))
    return cases


def spread(cases: list[Case], limit: int | None) -> list[Case]:
    """`limit` cases evenly spread over the set (its cases are grouped by topic), always the same ones."""
    if limit is None or limit >= len(cases):
        return cases
    return [cases[i * len(cases) // limit] for i in range(limit)]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- the checker --------------------------------------------------------------------------------------------

def check_call(case: Case, name: str | None, arguments: dict[str, Any] | None) -> tuple[bool, bool, str]:
    """(right function, right arguments, why not) for one call against the case's possible answers."""
    expected, possible = next(iter(case.answers[0].items()))
    if name != expected:
        return False, False, f"called {name!r}, expected {expected!r}"
    function = next(f for f in case.functions if f["name"] == expected)
    props = function["parameters"].get("properties", {})
    arguments = arguments or {}
    for param in function["parameters"].get("required", []):
        if param not in arguments:
            return True, False, f"missing required {param!r}"
    for param, value in arguments.items():
        if param not in props or param not in possible:
            return True, False, f"unexpected parameter {param!r}"
        if not _value_ok(props[param].get("type", "any"), value, possible[param]):
            return True, False, f"{param}={value!r}, expected one of {possible[param]!r}"
    for param, values in possible.items():
        if param not in arguments and "" not in values:
            return True, False, f"missing {param!r}"
    return True, True, ""


def _standard(text: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def _value_ok(kind: str, value: Any, possible: list[Any]) -> bool:
    if kind == "float" and type(value) is int:
        value = float(value)
    want = _PY_TYPES.get(kind)
    if want is not None and type(value) is not want:
        return False
    if isinstance(value, str):
        return _standard(value) in [_standard(p) for p in possible if isinstance(p, str)]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return any(isinstance(p, list) and len(p) == len(value) and all(
            isinstance(d, dict) and _dict_ok(v, d) for v, d in zip(value, p, strict=True)) for p in possible)
    if isinstance(value, list):
        norm = [_standard(v) if isinstance(v, str) else v for v in value]
        return any(isinstance(p, list) and norm == [_standard(v) if isinstance(v, str) else v for v in p]
                   for p in possible)
    if isinstance(value, dict):
        return any(isinstance(p, dict) and _dict_ok(value, p) for p in possible)
    return value in possible


def _dict_ok(value: dict[str, Any], possible: dict[str, list[Any]]) -> bool:
    for key, item in value.items():
        if key not in possible:
            return False
        options = [_standard(p) if isinstance(p, str) else p for p in possible[key]]
        if (_standard(item) if isinstance(item, str) else item) not in options:
            return False
    return all(key in value or "" in options for key, options in possible.items())


# --- the two clients ----------------------------------------------------------------------------------------

@dataclass
class Outcome:
    id: str
    set: str
    mode: str
    expected: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Every call the model made, in order, with the loop's verdict (`error` code or None)."""
    answer: dict[str, Any] | None = None
    selected: bool = False
    correct: bool = False
    first_correct: bool = False
    why: str = ""
    notices: list[str] = field(default_factory=list)
    text: str = ""
    seconds: float = 0.0
    failure: str | None = None
    requests: int = 0
    """Chat Completions requests the server answered for the case (counted at the adapter for Sunwell)."""


_CALL_BEGUN = re.compile(r'(?:\A|\n)\s*(?:```\w*\s*|<tool_call>\s*)?\{\s*"name"\s*:')
"""A JSON call begun on a line of the reply, cut off by the token limit before it closed (no call parsed): at its
start or after prose, for every client alike (Sunwell says so with a `tool_call_cut_off` notice, the anchor's text
shows it)."""


def judge(case: Case, outcome: Outcome) -> Outcome:
    if len(case.answers) > 1:
        return _judge_parallel(case, outcome)
    if not case.answers:  # irrelevance: any call is wrong, however well formed, and so is one begun and cut off
        outcome.answer = outcome.calls[0] if outcome.calls else None
        begun = "tool_call_cut_off" in outcome.notices or bool(_CALL_BEGUN.search(outcome.text))
        # a case that failed (a timeout, a server error) said nothing: no answer either
        outcome.selected = outcome.correct = outcome.first_correct = not (outcome.calls or begun or outcome.failure)
        outcome.why = (f"called {outcome.calls[0]['name']!r}" if outcome.calls else
                       "began a call, cut off" if begun else "")
        return outcome
    if outcome.calls:
        accepted = [c for c in outcome.calls if c.get("error") in (None, "dry_run")]
        outcome.answer = accepted[0] if accepted else outcome.calls[-1]
        first = outcome.calls[0]
        outcome.first_correct = check_call(case, first["name"], first["arguments"])[1]
        outcome.selected, outcome.correct, outcome.why = check_call(
            case, outcome.answer["name"], outcome.answer["arguments"])
    else:
        outcome.why = "no tool call"
    return outcome


def _judge_parallel(case: Case, outcome: Outcome) -> Outcome:
    """Every expected call made by a distinct accepted call, and no other accepted call (BFCL's parallel checker
    asks the same of one reply; Sunwell, one call per reply on a small model, may take several)."""
    accepted = [c for c in outcome.calls if c.get("error") in (None, "dry_run")]
    left, right, named = list(accepted), 0, 0
    for entry in case.answers:
        one = Case(case.id, case.set, case.question, case.functions, [entry])
        if hit := next((c for c in left if check_call(one, c["name"], c["arguments"])[1]), None):
            left.remove(hit)
            right += 1
        named += hit is not None or any(check_call(one, c["name"], c["arguments"])[0] for c in left)
    outcome.answer = accepted[0] if accepted else (outcome.calls[-1] if outcome.calls else None)
    outcome.selected = named == len(case.answers)
    outcome.correct = right == len(case.answers) and not left
    outcome.first_correct = outcome.correct and len(accepted) == len(outcome.calls)
    outcome.why = "" if outcome.correct else f"{right} of {len(case.answers)} calls right, {len(left)} other"
    return outcome


class SunwellClient:
    """Real turns of the product: Engine's provider wrapping, the loop, validation, the dry-run gate."""

    def __init__(self, base_url: str, model: str, rounds: int, data: Path,
                 overrides: dict[str, Any] | None = None, mode: str = "sunwell", max_tokens: int = 4096) -> None:
        self.mode = mode
        self.settings = Settings(model=f"openai-compatible:{model}", base_url=base_url, dry_run=True,
                                 approval="deny", max_tool_turns=rounds, data_dir=data / "data",
                                 models={model: overrides} if overrides else {}, max_tokens=max_tokens)
        workspace = data / "workspace"
        workspace.mkdir(parents=True, exist_ok=True)
        self.engine = Engine(self.settings, workspace)
        self.rounds = rounds
        self.requests = 0

    async def run(self, case: Case) -> Outcome:
        outcome = Outcome(case.id, case.set, self.mode, case.expected)
        calls: dict[str, dict[str, Any]] = {}
        task: asyncio.Task | None = None
        answered = accepted = 0
        wanted = max(len(case.answers), 1)  # the parallel sets want several calls

        def sink(event: Any) -> None:
            nonlocal answered, accepted
            if event.type == "toolCall":
                calls[event.call_id] = {"name": event.name, "arguments": event.arguments, "raw": event.raw}
            elif event.type == "toolResult":
                calls[event.call_id]["error"] = event.error.code if event.error else None
                answered += 1
                accepted += not event.error or event.error.code == "dry_run"
                # dry_run means the call passed validation: the answer, once there are as many as the case wants.
                # Past --rounds calls for each, stop too.
                if accepted >= wanted or answered >= self.rounds * wanted:
                    task.cancel()
            elif event.type == "notice":
                outcome.notices.append(event.code)
            elif event.type == "text":
                outcome.text += event.delta

        sent = self.requests
        task = asyncio.ensure_future(self._turn(case, sink))
        done = await task
        outcome.requests = self.requests - sent
        outcome.calls = list(calls.values())
        # `toolCall` events carry the call as the model wrote it. When the loop repaired a name or coerced the
        # arguments (it says so in a notice), the checker judges what would have run: both are deterministic.
        schemas = {tool.name: tool.parameters for tool in case.tools}
        for call in outcome.calls:
            if "repaired_tool_name" in outcome.notices and call["name"] not in schemas:
                call["name"] = canonical_tool_name(call["name"], list(schemas)) or call["name"]
            if "coerced_arguments" in outcome.notices and call["name"] in schemas:
                call["arguments"] = coerce_arguments(schemas[call["name"]], call["arguments"])[0]
        if done.status == "error":
            outcome.failure = done.error
        return judge(case, outcome)

    async def _turn(self, case: Case, sink):
        # Assembled the way `Engine.run_turn` assembles a turn, with the case's functions as the only tools.
        engine, tools = self.engine, case.tools
        spec = engine.models.spec()
        self._count(engine.models.provider(spec))
        session = engine.open_session(None, case.question)
        window = await engine.models.window(spec, session)
        jail = Jail(engine.workspace)
        plan = await plan_turn(self.settings, spec, engine.models.capabilities(spec), window, tools, (Trust.read_only, None),
                               jail=jail, lens=None, instructions=(), context=engine.live.get(session).context,
                               text=case.question)
        stack = engine.models.stack(spec, session, window[0])
        config = TurnConfig(
            plan=plan,
            provider=stack.turn,
            tool_ctx=ToolContext(jail=jail),
            summariser=Summariser(stack.windowed, spec.model, plan.window, self.settings.provider_attempts),
            gate=Gate(engine.approval, dry_run=len(case.answers) < 2),
            max_tool_turns=self.settings.max_tool_turns,
        )
        log = TurnLog(engine.store, session, sink)
        return await Turn(config, log, engine.store.messages(session)).run(UserMessage(text=case.question))


    def _count(self, adapter: Any) -> None:
        """Count the requests the adapter has answered (its one place that posts one). A refusal of a form of
        constraint is not counted: an endpoint's form is learned once, by the first request of a process."""
        if getattr(adapter, "_counted", False):
            return
        create = adapter._create

        async def counted(params: dict[str, Any]) -> Any:
            response = await create(params)
            self.requests += 1
            return response

        adapter._create, adapter._counted = counted, True


class NativeClient:
    """The request a plain client sends: the question, the tools offered natively, the raw SDK. `naive` trusts
    only `tool_calls`; `anchor` is the model's own ceiling: its chat template with the tools in it, read leniently
    (native `tool_calls`, else each JSON object with `name` and `arguments` in the text)."""

    def __init__(self, base_url: str, model: str, temperature: float | None = None, *, lenient: bool,
                 max_tokens: int = 512) -> None:
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(base_url=base_url, api_key="sk-no-key", max_retries=0)
        self.model, self.lenient, self.max_tokens = model, lenient, max_tokens
        self.sampling = {} if temperature is None else {"temperature": temperature}

    async def run(self, case: Case) -> Outcome:
        outcome = Outcome(case.id, case.set, "anchor" if self.lenient else "naive", case.expected)
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                    "parameters": t.parameters}} for t in case.tools]
        response = await self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": case.question}], tools=tools, max_tokens=self.max_tokens,
            **self.sampling)
        message = response.choices[0].message
        outcome.text, outcome.requests = message.content or "", 1
        for call in message.tool_calls or []:
            outcome.calls.append({"name": call.function.name, "arguments": json_object(call.function.arguments),
                                  "raw": None})
        if self.lenient and not outcome.calls:
            outcome.calls = json_calls(outcome.text)
        return judge(case, outcome)


def json_object(text: str | None) -> dict[str, Any] | None:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def json_calls(text: str) -> list[dict[str, Any]]:
    """Every JSON object in `text` with a string `name` and object (or JSON text) `arguments`, outermost first."""
    calls, decoder, at = [], json.JSONDecoder(), 0
    while (start := text.find("{", at)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            at = start + 1
            continue
        arguments = value.get("arguments") if isinstance(value, dict) else None
        if isinstance(arguments, str):
            arguments = json_object(arguments)
        if isinstance(value, dict) and isinstance(value.get("name"), str) and isinstance(arguments, dict):
            calls.append({"name": value["name"], "arguments": arguments, "raw": None})
            at = end
        else:
            at = start + 1
    return calls


def classify(sunwell: Outcome, case: Case) -> str:
    """Why Sunwell missed a case the anchor got right."""
    if not case.answers:
        return "called a function where the answer was text"
    if not sunwell.calls:
        return "format: no call found" if "{" in sunwell.text or "<" in sunwell.text else "model: answered in prose"
    call = sunwell.answer or sunwell.calls[-1]
    if call.get("raw") is not None or call.get("arguments") is None:
        return "format: arguments unreadable"
    if not sunwell.selected:
        return "model reading: function"
    declared = next(f for f in case.functions if f["name"] == call["name"])["parameters"].get("properties", {})
    if set(call["arguments"]) - set(declared):
        return "prompt steering: parameter not in the schema"
    return "model reading: arguments"


def compare(outcomes: list[Outcome], cases: dict[str, Case], mode: str = "sunwell") -> list[dict[str, Any]]:
    """The cases the anchor gets right and `mode` does not, classified."""
    anchor = {o.id: o for o in outcomes if o.mode == "anchor"}
    rows = []
    for o in outcomes:
        if o.mode == mode and not o.correct and o.id in anchor and anchor[o.id].correct:
            rows.append({"id": o.id, "class": classify(o, cases[o.id]), "sunwell": o.answer or o.calls[-1:] or o.text,
                         "anchor": anchor[o.id].answer, "why": o.why})
    return rows


# --- the run ------------------------------------------------------------------------------------------------

def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    selected = sum(o.selected for o in outcomes)
    repairs = [sum(code in REPAIR_NOTICES for code in o.notices) for o in outcomes]
    return {
        "cases": n,
        "tool_selection": _ratio(selected, n),
        "parameter_accuracy": _ratio(sum(o.correct for o in outcomes), selected),
        "first_attempt": _ratio(sum(o.first_correct for o in outcomes), n),
        "repairs": sum(repairs),
        "cases_repaired": sum(r > 0 for r in repairs),
        "recovered_by_retry": sum(o.correct and not o.first_correct for o in outcomes),
        "overall": _ratio(sum(o.correct for o in outcomes), n),
        "errors": sum(o.failure is not None for o in outcomes),
        "seconds_per_case": round(sum(o.seconds for o in outcomes) / n, 2) if n else 0.0,
        "requests_per_case": round(sum(o.requests for o in outcomes) / n, 2) if n else 0.0,
    }


def _ratio(k: int, n: int) -> float:
    return round(k / n, 4) if n else 0.0


def table(summary: dict[str, dict[str, dict[str, Any]]]) -> str:
    header = ("| set | client | cases | tool selection | parameter accuracy | first attempt | repairs (cases) "
              "| recovered by retry | overall | s/case | requests/case |")
    rows = [header, "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, modes in summary.items():
        for mode, m in modes.items():
            rows.append(f"| {name} | {mode} | {m['cases']} | {m['tool_selection']:.1%} | "
                        f"{m['parameter_accuracy']:.1%} | {m['first_attempt']:.1%} | {m['repairs']} "
                        f"({m['cases_repaired']}) | {m['recovered_by_retry']} | **{m['overall']:.1%}** | "
                        f"{m['seconds_per_case']} | {m.get('requests_per_case', '')} |")
    return "\n".join(rows)


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    root = data_dir(args.data) if set(args.sets) - set(OWN_SETS) else Path()  # our own sets need no BFCL
    tmp = Path(tempfile.mkdtemp(prefix="sunwell-eval-"))
    overrides = dict(item.split("=", 1) for item in args.override)
    overrides = {key: json.loads(value) if value in ("true", "false") or value.isdigit() else value
                 for key, value in overrides.items()}
    if args.temperature is not None:
        overrides["temperature"] = args.temperature
    # Both clients sample alike: what Sunwell sends for this model (0 for a small one) unless --temperature says.
    temperature = capabilities_for(args.model, "openai-compatible", {args.model: overrides}).temperature
    # --max-tokens caps every reply of every client alike (an irrelevance case is decided by a reply's start)
    limits = {"max_tokens": args.max_tokens} if args.max_tokens else {}
    clients = {"sunwell": lambda: SunwellClient(args.base_url, args.model, args.rounds, tmp, overrides, **limits),
               "sunwell-free": lambda: SunwellClient(args.base_url, args.model, args.rounds, tmp,
                                                     {**overrides, "constrained": False}, "sunwell-free", **limits),
               "naive": lambda: NativeClient(args.base_url, args.model, temperature, lenient=False, **limits),
               "anchor": lambda: NativeClient(args.base_url, args.model, temperature, lenient=True, **limits)}
    outcomes: list[Outcome] = []
    summary: dict[str, dict[str, Any]] = {}
    for name in args.sets:
        cases = [c for c in load_cases(root, name, args.limit) if not args.cases or c.id in args.cases]
        if not cases:
            continue
        summary[name] = {}
        for mode in args.modes:
            client = clients[mode]()
            done: list[Outcome] = []
            for i, case in enumerate(cases, 1):
                started = time.monotonic()
                try:
                    outcome = await asyncio.wait_for(client.run(case), timeout=args.timeout)
                except Exception as exc:  # noqa: BLE001 - one broken case is a data point, not the end of the run
                    outcome = judge(case, Outcome(case.id, name, mode, case.expected,
                                                  failure=f"{type(exc).__name__}: {exc}"))
                outcome.seconds = round(time.monotonic() - started, 2)
                done.append(outcome)
                if args.verbose:
                    mark = "ok " if outcome.correct else "BAD"
                    said = "" if case.answers or outcome.calls else repr(outcome.text[:60])
                    print(f"{mode:7} {mark} {case.id:20} {outcome.seconds:5.1f}s {outcome.why}{said}"
                          f"{' [' + outcome.failure + ']' if outcome.failure else ''}", file=sys.stderr)
                elif i % 10 == 0:
                    print(f"{name}/{mode}: {i}/{len(cases)}", file=sys.stderr)
            summary[name][mode] = summarize(done)
            outcomes += done
    return {"model": args.model, "base_url": args.base_url, "limit": args.limit, "rounds": args.rounds,
            "max_tokens": args.max_tokens,
            "overrides": overrides, "temperature": args.temperature,
            "date": time.strftime("%Y-%m-%d %H:%M"), "summary": summary,
            "cases": [asdict(o) for o in outcomes]}


def rejudge(path: Path, root: Path) -> dict[str, Any]:
    """A results file scored again with the current checker (no model needed)."""
    results = json.loads(path.read_text(encoding="utf-8"))
    cases = {c.id: c for name in {o["set"] for o in results["cases"]} for c in load_cases(root, name, None)}
    outcomes = []
    for row in results["cases"]:
        row = {k: v for k, v in row.items() if k not in ("answer", "selected", "correct", "first_correct", "why")}
        outcomes.append(judge(cases[row["id"]], Outcome(**row)))
    summary: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        summary.setdefault(o.set, {}).setdefault(o.mode, [])
    for name, modes in summary.items():
        for mode in modes:
            modes[mode] = summarize([o for o in outcomes if o.set == name and o.mode == mode])
    return {**results, "summary": summary, "cases": [asdict(o) for o in outcomes]}


def print_misses(results: dict[str, Any], root: Path) -> None:
    """Per Sunwell mode, the cases the anchor gets right and it does not, by class, then each case."""
    outcomes = [Outcome(**row) for row in results["cases"]]
    cases = {c.id: c for name in {o.set for o in outcomes} for c in load_cases(root, name, None)}
    for mode in sorted({o.mode for o in outcomes} & {"sunwell", "sunwell-free"}):
        rows = compare(outcomes, cases, mode)
        classes: dict[str, int] = {}
        for row in rows:
            classes[row["class"]] = classes.get(row["class"], 0) + 1
        print(f"\n{mode}: {len(rows)} cases the anchor gets right and it does not: {classes}")
        for row in rows:
            print(f"  {row['id']}: {row['class']}: {row['why']} | sunwell {json.dumps(row['sunwell'])[:160]} "
                  f"| anchor {json.dumps(row['anchor'])[:160]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:18090/v1")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--sets", default=",".join(SETS), type=lambda s: [x for x in s.split(",") if x])
    parser.add_argument("--modes", default="sunwell,naive", type=lambda s: [x for x in s.split(",") if x])
    parser.add_argument("--limit", type=int, default=50, help="cases per set, evenly spread (0 = all)")
    parser.add_argument("--cases", type=lambda s: set(s.split(",")) - {""}, default=set(),
                        help="only these case ids (comma-separated), among the --limit ones")
    parser.add_argument("--rounds", type=int, default=3, help="calls the model may make per case (retries)")
    parser.add_argument("--max-tokens", type=int, help="cap every reply of every client at this many tokens")
    parser.add_argument("--timeout", type=float, default=180, help="seconds per case")
    parser.add_argument("--data", help="bfcl_eval/data directory (default: the installed bfcl-eval)")
    parser.add_argument("--out", default="toolcall_eval.json", help="where to write the JSON results")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per case on stderr")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a capability override for the model, as in config `models:` (nativeTools=true)")
    parser.add_argument("--temperature", type=float,
                        help="sample at this temperature (default: what Sunwell sends for the model, 0 for a small one)")
    parser.add_argument("--rejudge", metavar="RESULTS", help="score a results file again, run no model")
    parser.add_argument("--compare", action="store_true",
                        help="list the cases the anchor gets right and Sunwell does not, classified")
    args = parser.parse_args(argv)
    if args.verbose:  # how each free reply opened, before the case's line (models/emulation/choice.py)
        import logging

        logging.basicConfig(format="  %(message)s")
        logging.getLogger("sunwell.models.emulation.choice").setLevel(logging.DEBUG)
    args.limit = args.limit or None
    if args.rejudge:
        results = rejudge(Path(args.rejudge), data_dir(args.data))
        Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
        print(table(results["summary"]))
        if args.compare:
            print_misses(results, data_dir(args.data))
        return 0
    unknown = set(args.modes) - {"sunwell", "sunwell-free", "naive", "anchor"}
    if unknown:
        parser.error(f"unknown mode(s): {', '.join(sorted(unknown))}")
    results = asyncio.run(run_all(args))
    Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    print(table(results["summary"]))
    if args.compare:
        print_misses(results, data_dir(args.data))
    print(f"\nresults: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
