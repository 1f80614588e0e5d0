"""Constrained decoding, part 1: a reply's JSON schema compiled into the matcher's grammar.

`compile_schema` turns the schema pydantic writes (`model_json_schema`) into a small tree of
nodes — objects (all properties, in schema order), arrays with min/max items, strings with
min/max length or an enum, literals, integers, alternatives — each knowing the fewest
characters a value of it takes. Anything else raises `UnsupportedSchema`, so the caller
generates unconstrained instead of wrongly. memvault.engines.constrain_matcher walks it.
"""

import json
from dataclasses import dataclass
from typing import Any, Union

DIGITS = frozenset("0123456789")
_MAX_REF_DEPTH = 16


class UnsupportedSchema(ValueError):
    """The schema uses a feature the matcher does not cover; generate unconstrained."""


# Nodes compare by identity (eq=False): states hold them, and hashing a whole tree per step would cost.
@dataclass(frozen=True, eq=False)
class Obj:
    props: tuple[tuple[str, "Node"], ...]
    min_chars: int = 0


@dataclass(frozen=True, eq=False)
class Arr:
    item: "Node"
    min_items: int = 0
    max_items: int | None = None
    min_chars: int = 0


@dataclass(frozen=True, eq=False)
class Str:
    min_len: int = 0
    max_len: int | None = None
    enum: tuple[str, ...] | None = None
    min_chars: int = 0


@dataclass(frozen=True, eq=False)
class Lit:
    text: str
    min_chars: int = 0


@dataclass(frozen=True, eq=False)
class Int:
    min_chars: int = 1


@dataclass(frozen=True, eq=False)
class Alt:
    options: tuple["Node", ...]
    min_chars: int = 0


Node = Union[Obj, Arr, Str, Lit, Int, Alt]


def first_chars(node: Node) -> frozenset[str]:
    """The characters a value of `node` can start with."""
    if isinstance(node, Obj):
        return frozenset("{")
    if isinstance(node, Arr):
        return frozenset("[")
    if isinstance(node, Str):
        return frozenset('"')
    if isinstance(node, Lit):
        return frozenset(node.text[0])
    if isinstance(node, Int):
        return DIGITS | {"-"}
    return frozenset().union(*(first_chars(o) for o in node.options))


def _obj(props: list[tuple[str, Node]]) -> Obj:
    size = 2 + sum(len(json.dumps(k)) + 1 + v.min_chars for k, v in props) + max(0, len(props) - 1)
    return Obj(tuple(props), size)


def _arr(item: Node, lo: int, hi: int | None) -> Arr:
    if hi is not None and hi < lo:
        raise UnsupportedSchema(f"array with maxItems {hi} < minItems {lo}")
    return Arr(item, lo, hi, 2 + lo * item.min_chars + max(0, lo - 1))


def _str(lo: int, hi: int | None, enum: tuple[str, ...] | None = None) -> Str:
    if enum is not None:
        return Str(0, None, enum, 2 + min(len(e) for e in enum))
    if hi is not None and hi < lo:
        raise UnsupportedSchema(f"string with maxLength {hi} < minLength {lo}")
    return Str(lo, hi, None, 2 + lo)


def _alt(options: list[Node]) -> Node:
    if len(options) == 1:
        return options[0]
    seen: set[str] = set()
    for option in options:
        first = first_chars(option)
        if first & seen:
            # Branches told apart by their first character only; anything subtler is not covered.
            raise UnsupportedSchema("anyOf branches that start alike")
        seen |= first
    return Alt(tuple(options), min(o.min_chars for o in options))


def compile_schema(schema: dict[str, Any]) -> Node:
    """The matcher's grammar for a JSON schema (as pydantic's `model_json_schema` writes it)."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return _compile(schema, defs, 0)


def _literal(value: object) -> Node:
    if isinstance(value, str):
        return _str(0, None, (value,))
    if value is None or isinstance(value, (bool, int)):
        text = json.dumps(value)
        return Lit(text, len(text))
    raise UnsupportedSchema(f"enum value {value!r}")


def _compile(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> Node:
    if depth > _MAX_REF_DEPTH:
        raise UnsupportedSchema("schema nests too deep (recursive $ref?)")
    if "$ref" in schema:
        ref = str(schema["$ref"])
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith("#/") or name not in defs:
            raise UnsupportedSchema(f"$ref {ref!r}")
        return _compile(defs[name], defs, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _alt([_compile(s, defs, depth + 1) for s in schema[key]])
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        values = list(schema["enum"])
        if values and all(isinstance(v, str) for v in values):
            return _str(0, None, tuple(values))
        return _alt([_literal(v) for v in values])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _alt([_compile({**schema, "type": k}, defs, depth + 1) for k in kind])
    if kind == "object":
        props = schema.get("properties")
        if not isinstance(props, dict):
            raise UnsupportedSchema("object without properties")
        return _obj([(str(k), _compile(v, defs, depth + 1)) for k, v in props.items()])
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            raise UnsupportedSchema("array without one items schema")
        return _arr(_compile(items, defs, depth + 1), int(schema.get("minItems", 0)), schema.get("maxItems"))
    if kind == "string":
        return _str(int(schema.get("minLength", 0)), schema.get("maxLength"))
    if kind == "integer":
        return Int()
    if kind == "boolean":
        return _alt([Lit("true", 4), Lit("false", 5)])
    if kind == "null":
        return Lit("null", 4)
    raise UnsupportedSchema(f"type {kind!r}")
