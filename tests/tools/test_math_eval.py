"""math_eval: arithmetic and `math` only, through simpleeval, and every way out of that refused quickly.

The hostile inputs come first: each must be refused with a `validation` or `execution` error in well under a second
(a model that asks for `9**9**9` must not hang the turn, nor one that reaches for `__class__`).
"""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path

import pytest

from conftest import call_tool
from sunwell.tools.base import ToolContext, ToolFailure
from sunwell.tools.handlers.arithmetic import MATH_EVAL, MAX_EXPRESSION
from sunwell.tools.workspace.jail import Jail


def evaluate(expression: str) -> str:
    ctx = ToolContext(jail=Jail(Path.cwd()))
    return asyncio.run(call_tool(MATH_EVAL, {"expression": expression}, ctx))


def refused(expression: str) -> tuple[str, str]:
    started = time.monotonic()
    with pytest.raises(ToolFailure) as info:
        evaluate(expression)
    assert time.monotonic() - started < 1.0, f"{expression[:40]!r} took too long to refuse"
    return info.value.error.code, info.value.error.message


@pytest.mark.parametrize("expression", [
    "9**9**9", "10**10**10", "2**100000", "(10**3000)*(10**3000)*(10**3000)", "1 << 10**6", "(2**9000) << 5000",
    "math.factorial(10**6)", "factorial(100000)", "math.comb(10**9, 5*10**8)", "math.perm(10**7, 10**6)",
    "math.lcm(2**9000, 3**5000, 5**4000)", "lcm(" + ", ".join(["2**9999 - 1", "3**6000 - 1", "5**4000 - 1"] * 8) + ")",
    "round(123, -10**7)", "round(2**9000, -10**12)", "10.0**400", "math.exp(10**5)", "math.pow(10, 400)",
    "1/0", "math.sqrt(-1)", "math.log(0)", "1 % 0",
])
def test_huge_or_undefined_results_are_execution_errors(expression):
    code, message = refused(expression)
    assert code == "execution", message


@pytest.mark.parametrize(("expression", "word"), [
    ("().__class__.__bases__[0].__subclasses__()", "attribute"),
    ("(1).__class__", "attribute"),
    ("(1).real", "attribute"),
    ("math.__dict__", "attribute"),
    ("math.sys", "math"),
    ("__import__('os').system('id')", "__import__"),
    ("open('/etc/passwd')", "open"),
    ("eval('1')", "eval"),
    ("os.getcwd()", "os"),
    ("[x for x in range(10**9)]", "comprehension"),
    ("sum(x for x in range(10**9))", "sum"),
    ("(lambda: 1)()", "lambda"),
    ("'a' * 10**9", "number"),
    ("[1] * 10**9", "list"),
    ("x := 5", "syntax"),
    ("1; import os", "syntax"),
    ("", "empty"),
    ("f'{1}'", "number"),
])
def test_anything_but_arithmetic_is_refused_as_invalid(expression, word):
    code, message = refused(expression)
    assert code == "validation" and word in message.lower(), message


def test_deep_nesting_and_long_input_are_refused_before_evaluation():
    # parentheses alone nest nothing ("((1))" is 1), up to the parser's own limit
    assert evaluate("(" * 150 + "1" + ")" * 150) == "1"
    for expression in ["(" * 220 + "1" + ")" * 220, "-" * 100 + "1", "-" * 900 + "1", "+".join(["1"] * 120),
                       "abs(" * 60 + "1" + ")" * 60]:
        code, message = refused(expression)
        assert code == "validation" and ("deep" in message or "nested" in message or "long" in message), message
    code, message = refused("1+" * MAX_EXPRESSION + "1")
    assert code == "validation" and f"{MAX_EXPRESSION}" in message


@pytest.mark.parametrize(("expression", "expected"), [
    ("2 + 3 * 4", "14"),
    ("(2 + 3) * 4", "20"),
    ("7 / 2", "3.5"),
    ("7 // 2", "3"),
    ("-7 % 3", "2"),
    ("2 ** 10", "1024"),
    ("2 ** -1", "0.5"),
    ("sqrt(16)", "4.0"),
    ("math.sqrt(2) ** 2", repr(math.sqrt(2) ** 2)),
    ("math.pi", repr(math.pi)),
    ("e", repr(math.e)),
    ("math.factorial(20)", "2432902008176640000"),
    ("factorial(100) // factorial(98)", "9900"),
    ("comb(52, 5)", "2598960"),
    ("round(math.log10(12345), 3)", "4.091"),
    ("max(3, 9, 4) - min(3, 9, 4)", "6"),
    ("abs(-2.5)", "2.5"),
    ("hypot(3, 4)", "5.0"),
    ("math.isclose(0.1 + 0.2, 0.3)", "True"),
    ("1 < 2 and 3 > 2", "True"),
    ("math.floor(7.9) if 2 > 1 else 0", "7"),
    ("math.gcd(12, 18)", "6"),
    ("2 ** 9000 % 1000", str(2 ** 9000 % 1000)),
    ("  1 +\n 1 ", "2"),
])
def test_arithmetic_and_math_functions_evaluate(expression, expected):
    assert evaluate(expression) == expected


def test_an_unknown_name_says_what_is_available():
    code, message = refused("foo(2)")
    assert code == "validation" and "foo" in message
    code, message = refused("tau2 + 1")
    assert code == "validation" and "tau2" in message
