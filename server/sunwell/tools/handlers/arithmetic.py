"""math_eval: one arithmetic expression, with `math`'s functions and constants, and nothing else.

simpleeval walks the expression (never `eval`); before it does, the tree is checked here against what arithmetic
needs — numbers, operators, comparisons, calls of math's functions (`sqrt(2)` or `math.sqrt(2)`) and `abs`, `round`,
`min`, `max` — so that anything else (attributes, names outside math, text, lists, comprehensions, lambdas) is
refused with a message that says what is allowed. Size is bounded before it is spent: the expression's length and
nesting, and every whole number a step would make (a power, a product, a shift, a factorial) is judged before it is
computed, so `9**9**9` is refused at once instead of filling the memory.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from pydantic import Field
from simpleeval import InvalidExpression, SimpleEval

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust

MAX_EXPRESSION = 500
"""Characters of one expression."""
MAX_DEPTH = 50
"""Nesting of the expression's tree (a left-to-right sum of n terms is n deep)."""
MAX_BITS = 10_000
"""The largest whole number a step may make: about 3,000 decimal digits."""
MAX_COUNTING = 10_000
"""The largest n of factorial, comb and perm (their results are judged by MAX_BITS as well)."""

_BUILTINS: dict[str, Callable[..., Any]] = {"abs": abs, "min": min, "max": max}
_CONSTANTS = {name: value for name, value in vars(math).items() if isinstance(value, float)}
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
          ast.Name, ast.Load, ast.Attribute, ast.Constant, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_NOT_ARITHMETIC: tuple[tuple[tuple[type[ast.AST], ...], str], ...] = (
    ((ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp), "comprehensions are not allowed"),
    ((ast.Lambda,), "lambda functions are not allowed"),
    ((ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Starred), "lists, tuples, sets and dicts are not allowed"),
    ((ast.JoinedStr, ast.FormattedValue), "only numbers are allowed, not text"),
    ((ast.Subscript, ast.Slice), "indexing is not allowed"),
)
_ALLOWED = "numbers, + - * / // % **, comparisons, math's functions and constants (sqrt or math.sqrt, pi), abs, " \
           "round, min, max"


class _TooLarge(ArithmeticError):
    pass


# ---- bounded steps ---------------------------------------------------------------------------------------------


def _checked(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise _TooLarge
    return value


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1 \
            and math.log2(abs(base)) * exponent > MAX_BITS:
        raise _TooLarge
    return _checked(base**exponent)


def _times(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > MAX_BITS + 1:
        raise _TooLarge
    return _checked(a * b)


def _shift(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b > MAX_BITS:
        raise _TooLarge
    return a << b


def _counting(function: Callable[..., Any]) -> Callable[..., Any]:
    """factorial, comb, perm: refused for an n whose result could only be refused after a long wait."""

    def bounded(*args: Any) -> Any:
        if any(isinstance(arg, int) and arg > MAX_COUNTING for arg in args):
            raise _TooLarge
        return _checked(function(*args))

    return bounded


def _round(number: Any, ndigits: Any = None) -> Any:
    # a whole number rounded to -n digits is computed with 10**n: refused before it is, like any other huge power
    if isinstance(ndigits, int) and abs(ndigits) > MAX_BITS:
        raise _TooLarge
    return round(number, ndigits)


def _lcm(*numbers: Any) -> Any:
    """math.lcm a pair at a time, each step judged, so that many large arguments cannot build a huge one first."""
    result = 1
    for number in numbers:
        result = _checked(math.lcm(result, number))
    return result


def _bounded(function: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *args, **kwargs: _checked(function(*args, **kwargs))


_OPERATORS: dict[type[ast.AST], Callable[..., Any]] = {
    ast.Add: lambda a, b: _checked(a + b), ast.Sub: lambda a, b: _checked(a - b), ast.Mult: _times,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _power,
    ast.LShift: _shift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
    ast.Not: operator.not_, ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{name: (_counting if name in ("factorial", "comb", "perm") else _bounded)(value)
       for name, value in vars(math).items() if callable(value) and not name.startswith("_")},
    **{name: _bounded(value) for name, value in _BUILTINS.items()},
    "lcm": _lcm,
    "round": _round,
}
_MATH = SimpleNamespace(**{name: value for name, value in _FUNCTIONS.items() if hasattr(math, name)}, **_CONSTANTS)


# ---- the check and the evaluation ------------------------------------------------------------------------------


def _refuse(message: str) -> ToolFailure:
    return ToolFailure("validation", f"parameter 'expression': {message}", f"math_eval takes {_ALLOWED}")


def _check(tree: ast.Expression) -> None:
    """Refuse what is not arithmetic, and nesting deeper than MAX_DEPTH, before anything is evaluated."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _refuse(f"nested too deeply (more than {MAX_DEPTH} levels); split it into smaller steps")
        for kinds, message in _NOT_ARITHMETIC:
            if isinstance(node, kinds):
                raise _refuse(message)
        if not isinstance(node, _NODES):
            raise _refuse(f"{type(node).__name__} is not arithmetic")
        if isinstance(node, ast.Constant) and type(node.value) not in (int, float, complex, bool):
            raise _refuse("only numbers are allowed, not text")
        if isinstance(node, ast.Attribute):
            if not (isinstance(node.value, ast.Name) and node.value.id == "math"):
                raise _refuse(f"attribute access is not allowed ({ast.unparse(node)}): only math.NAME names a math "
                              "function or constant")
            if not hasattr(_MATH, node.attr):
                raise _refuse(f"unknown math attribute {node.attr!r}: only math's functions and constants")
            continue  # `math` itself is read only here
        if isinstance(node, ast.Name) and node.id not in _FUNCTIONS and node.id not in _CONSTANTS \
                and node.id not in ("True", "False"):
            hint = " (use math.NAME)" if node.id == "math" else ""
            raise _refuse(f"unknown name {node.id!r}{hint}")
        stack.extend((child, depth + 1) for child in reversed(list(ast.iter_child_nodes(node))))


def evaluate(expression: str) -> Any:
    """The value of `expression`; raises ToolFailure (`validation`: not arithmetic; `execution`: it failed)."""
    if len(expression) > MAX_EXPRESSION:
        raise _refuse(f"too long ({len(expression):,} characters, at most {MAX_EXPRESSION})")
    expression = " ".join(expression.split())  # a model may break a long one over lines; no text is allowed in it
    if not expression:
        raise _refuse("it is empty")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise _refuse(f"not a valid expression (syntax error: {exc.msg})") from None
    except (RecursionError, MemoryError):
        raise _refuse(f"nested too deeply (more than {MAX_DEPTH} levels)") from None
    _check(tree)
    evaluator = SimpleEval(operators=dict(_OPERATORS), functions=dict(_FUNCTIONS),
                           names={**_CONSTANTS, "math": _MATH, "True": True, "False": False})
    evaluator.nodes = {kind: handler for kind, handler in evaluator.nodes.items() if issubclass(kind, _NODES)}
    try:
        return evaluator.eval(expression, previously_parsed=tree.body)
    except _TooLarge:
        raise ToolFailure("execution", f"the result would be too large (a whole number of more than {MAX_BITS:,} "
                          "bits, about 3,000 digits)", "use floats (2.0**5000) or logarithms for huge magnitudes") \
            from None
    except InvalidExpression as exc:
        raise _refuse(str(exc)) from None
    except OverflowError:
        raise ToolFailure("execution", f"{expression}: the result is too large for a floating-point number "
                          "(past about 1.8e308)", "use logarithms for such magnitudes") from None
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise ToolFailure("execution", f"{expression} failed: {exc or type(exc).__name__}") from None


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


class MathEvalArguments(ToolArguments):
    expression: str = Field(description="Arithmetic with math's functions, e.g. \"sqrt(2) * (3 + 4) ** 2\".")


async def math_eval(arguments: MathEvalArguments, ctx: ToolContext) -> str:
    return _shown(evaluate(arguments.expression))


MATH_EVAL = Tool.of(
    MathEvalArguments, math_eval,
    name="math_eval",
    description=(
        "Evaluate an arithmetic expression exactly, instead of computing it in your head. Numbers, + - * / // % "
        "**, comparisons, math's functions and constants (sqrt or math.sqrt, log, sin, factorial, pi, e), abs, "
        f"round, min and max; no variables, text or lists. At most {MAX_EXPRESSION} characters; whole numbers up "
        'to about 3,000 digits. Example: {"expression": "round(1200 * (1 + 0.035) ** 10, 2)"}.'
    ),
    min_trust=Trust.discovery,
    harmless=True,
    expendable=True,
)
