"""Operator schemas: ``torch.library.define``'s ``"ns::name.overload(Tensor x, *, float a=2.)
-> Tensor"``, parsed, printed as PyTorch prints them, and used to check and normalise a call.

Note [Schema calls]
  A call of a defined operator is checked against its schema as PyTorch's dispatcher does
  (too many positional arguments, a missing one, an unknown keyword, a value of the wrong
  type, each with PyTorch's message), and its values take the schema's types: a tuple for an
  ``int[]`` becomes a list, an int for an ``int[2]`` two ints, an int for a ``float`` a float,
  ``"cpu"`` for a ``Device`` a device, a 0-d tensor for a number its value. The kernel then
  gets the arguments as PyTorch hands them to a Python kernel: the positional ones in order up
  to the last one that differs from its default, and the keyword-only ones that differ from
  theirs, by name.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass

from .autograd.tensor import Tensor
from .runtime.device import device as Device
from .runtime.dtype import dtype as DType

# the element types a schema may name, and the Python name PyTorch's Argument.type gives each
_BASE = {"Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float", "bool": "bool",
         "str": "str", "Scalar": "number", "ScalarType": "int", "Device": "Device",
         "Layout": "int", "MemoryFormat": "int", "Generator": "Generator", "Dimname": "str",
         "SymFloat": "float", "SymBool": "bool", "complex": "complex", "Any": "Any"}
_UNKNOWN_TYPE = ("unknown type specifier. Common valid schema types include Tensor, SymInt, int, "
                 "float, bool, Scalar; for a full list, please see https://github.com/pytorch/"
                 "pytorch/blob/main/aten/src/ATen/native/README.md#func :")
_ARG = re.compile(r"^\s*(?P<base>[A-Za-z]+)(?P<alias>\([a-z]+!?\))?(?P<inner>\?)?"
                  r"(?P<list>\[\d*\])?(?P<outer>\?)?(?:\s+(?P<name>\w+))?"
                  r"(?:\s*=\s*(?P<default>.+?))?\s*$")


@dataclass(frozen=True)
class SchemaType:
    """One argument's or return's type: ``base`` (``"Tensor"``, ``"int"``...), whether each
    element may be None (``Tensor?``), the list length (None: not a list, 0: any), whether
    the whole value may be None (``int[]?``)."""

    base: str
    elem_optional: bool = False
    list_len: int | None = None
    optional: bool = False

    def __str__(self) -> str:
        """PyTorch's ``str(Argument.type)``: ``Tensor``, ``List[int]``, ``Optional[Device]``."""
        name = _BASE[self.base]
        if self.elem_optional:
            name = f"Optional[{name}]"
        if self.list_len is not None:
            name = f"List[{name}]"
        return f"Optional[{name}]" if self.optional else name


@dataclass(frozen=True)
class AliasInfo:
    """An argument's ``(a!)``: its alias set and whether the op writes to it."""

    is_write: bool
    before_set: frozenset


@dataclass(frozen=True)
class Argument:
    """One argument of a schema, with PyTorch's ``torch.Argument`` fields."""

    name: str
    type: SchemaType
    text: str  # the type as the schema writes it (``Tensor(a!)[]``), for printing
    default_value: object = None
    has_default: bool = False
    kwarg_only: bool = False
    is_write: bool = False  # ``(a!)``: the op writes to it
    alias: str = ""  # ``a`` of ``(a!)``

    @property
    def alias_info(self) -> AliasInfo | None:
        return AliasInfo(self.is_write, frozenset(self.alias)) if self.alias else None

    @property
    def is_out(self) -> bool:
        return self.is_write and self.kwarg_only

    def __str__(self) -> str:
        text = f"{self.text} {self.name}" if self.name else self.text
        return text + ("=" + _format_default(self.default_value) if self.has_default else "")


@dataclass(frozen=True)
class FunctionSchema:
    """A parsed schema: ``str()`` prints it as PyTorch does (``float a=2.``)."""

    name: str  # "ns::op"
    overload_name: str
    arguments: tuple
    returns: tuple

    def __str__(self) -> str:
        head = self.name + (f".{self.overload_name}" if self.overload_name else "")
        parts, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        rets = [str(r) for r in self.returns]
        ret = rets[0] if len(rets) == 1 and not self.returns[0].name else f"({', '.join(rets)})"
        return f"{head}({', '.join(parts)}) -> {ret}"

    @property
    def is_mutable(self) -> bool:
        return any(a.is_write for a in self.arguments)


def _format_default(value) -> str:
    """A default as PyTorch prints it: floats with 17 significant digits and a trailing dot
    when integral (``2.``, ``0.10000000000000001``), strings quoted, lists bracketed."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        text = f"{value:.17g}" if value else "0"  # (PyTorch prints -0.0 as 0.)
        return text if any(c in text for c in ".en") else text + "."
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_format_default(v) for v in value) + "]"
    return str(value)


class Tag(enum.Enum):
    """PyTorch's operator tags (``torch.Tag``), as ``custom_op(..., tags=...)`` and
    ``Library.define(..., tags=...)`` take them; tritongrad keeps them on the op."""

    core = 0
    cudagraph_unsafe = 1
    data_dependent_output = 2
    dynamic_output_shape = 3
    flexible_layout = 4
    generated = 5
    inplace = 6
    inplace_view = 7
    maybe_aliasing_or_mutating = 8
    needs_contiguous_strides = 9
    needs_exact_strides = 10
    needs_fixed_stride_order = 11
    nondeterministic_bitwise = 12
    nondeterministic_seeded = 13
    out = 14
    out_variant = 15
    pointwise = 16
    pt2_compliant_tag = 17
    reduction = 18
    view_copy = 19

    def __str__(self) -> str:
        return f"Tag.{self.name}"


def parse_schema(schema: str) -> FunctionSchema:
    """``torch.parse_schema``: the FunctionSchema of ``"ns::name.overload(args) -> returns"``."""
    return parse(schema)


def _here(schema: str, at: int, width: int) -> str:
    """PyTorch's pointer under the bad part of a schema."""
    return f"{schema}\n{' ' * at}{'~' * max(width, 1)} <--- HERE\n"


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()] if text.strip() else []


def _parse_default(raw: str, kind: SchemaType, schema: str):
    raw = raw.strip()
    if raw == "None":
        return None
    if raw in ("True", "False"):
        return raw == "True"
    if raw.startswith('"') and raw.endswith('"') or raw.startswith("'") and raw.endswith("'"):
        return raw[1:-1]
    if raw.startswith("[") and raw.endswith("]"):
        return [_parse_default(p, SchemaType(kind.base), schema) for p in _split_top(raw[1:-1])]
    try:
        value = int(raw)
        return float(value) if kind.base in ("float", "SymFloat") else value
    except ValueError:
        pass
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        at = schema.find(raw)
        raise RuntimeError(f"\ninvalid numeric default value:\n{_here(schema, at, len(raw))}")
    return value


def _parse_arg(text: str, schema: str, kwarg_only: bool, is_return: bool) -> Argument:
    m = _ARG.match(text)
    base = m and m.group("base")
    if m is None or base not in _BASE:
        word = (base or text.strip().split(" ")[0])
        raise RuntimeError(f"\n{_UNKNOWN_TYPE}\n{_here(schema, schema.find(word), len(word))}")
    if not is_return and not m.group("name"):
        raise RuntimeError(f"expected ident but found ')' here:\n{_here(schema, len(schema), 1)}")
    size = m.group("list")
    kind = SchemaType(base, bool(m.group("inner")) and size is not None,
                      None if size is None else int(size[1:-1] or 0),
                      bool(m.group("outer")) or (bool(m.group("inner")) and size is None))
    alias = m.group("alias") or ""
    type_text = text.strip().split(" ")[0] if m.group("name") else text.strip()
    default = m.group("default")
    value = _parse_default(default, kind, schema) if default is not None else None
    return Argument(m.group("name") or "", kind, type_text, value, default is not None,
                    kwarg_only, alias.endswith("!)"), alias.strip("()!"))


def parse(schema: str, qualname: str | None = None) -> FunctionSchema:
    """Parses ``"name.overload(args) -> returns"`` (``name`` omitted when ``qualname`` gives
    it: ``torch.library.define("ns::op", "(Tensor x) -> Tensor")``)."""
    text = schema.strip()
    open_at = text.find("(")
    arrow = text.rfind("->")
    if open_at < 0:
        word = text.split(" ")[-1] if " " in text else text
        raise RuntimeError(f"expected eof but found 'ident' here:\n"
                           f"{_here(text, text.rfind(word), len(word))}")
    head = text[:open_at].strip() if qualname is None else qualname
    close_at = _matching(text, open_at)
    if close_at < 0 or (arrow >= 0 and close_at > arrow) or arrow < 0:
        raise RuntimeError(f"expected ) but found 'arrow' here:\n"
                           f"{_here(text, max(arrow, 0), 2)}")
    ns, _, rest = head.rpartition("::")
    name, _, overload = rest.partition(".")
    arguments, kwarg_only, seen_default = [], False, False
    for part in _split_top(text[open_at + 1:close_at]):
        if part.strip() == "*":
            kwarg_only = True
            continue
        arg = _parse_arg(part, text, kwarg_only, False)
        if seen_default and not arg.has_default and not kwarg_only:
            raise RuntimeError(f"Non-default positional argument follows default argument. "
                               f"Parameter {arg.name} in {text}")
        seen_default |= arg.has_default
        arguments.append(arg)
    ret = text[arrow + 2:].strip()
    if ret.startswith("(") and ret.endswith(")"):
        returns = tuple(_parse_arg(p, text, False, True) for p in _split_top(ret[1:-1]))
    else:
        returns = (_parse_arg(ret, text, False, True),)
    return FunctionSchema(f"{ns}::{name}" if ns else name, overload, tuple(arguments), returns)


def _matching(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


# -- calls ------------------------------------------------------------------------------------

def _python_type(value) -> str:
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


class _CastError(Exception):
    pass


def _cast_one(value, base: str, elem_optional: bool):
    """``value`` as schema type ``base`` (Note [Schema calls]); raises _CastError."""
    if value is None:
        if elem_optional:
            return None
        raise _CastError
    if base == "Tensor":
        if isinstance(value, Tensor):
            return value
        raise _CastError
    if base in ("int", "SymInt", "Layout", "MemoryFormat"):
        if isinstance(value, Tensor) and value.dim() == 0 and not value.dtype.is_floating_point:
            return int(value.item())
        if isinstance(value, int):
            return int(value)
        raise _CastError
    if base in ("float", "SymFloat"):
        if isinstance(value, Tensor) and value.dim() == 0:
            return float(value.item())
        if isinstance(value, (int, float)):
            return float(value)
        raise _CastError
    if base in ("bool", "SymBool"):
        if isinstance(value, (bool, int)):
            return bool(value)
        raise _CastError
    if base == "Scalar":
        if isinstance(value, (bool, int, float, complex)):
            return value
        raise _CastError
    if base in ("str", "Dimname"):
        if isinstance(value, str):
            return value
        raise _CastError
    if base == "ScalarType":
        if isinstance(value, DType):
            return value
        raise _CastError
    if base == "Device":
        if isinstance(value, (Device, str, int)):
            return Device(value)
        raise _CastError
    return value  # Generator, complex, Any: as given


def cast(arg: Argument, value):
    """``value`` for argument ``arg``; raises _CastError when it does not fit."""
    kind = arg.type
    if value is None and kind.optional:
        return None
    if kind.list_len is None:
        return _cast_one(value, kind.base, kind.elem_optional)
    if kind.list_len and isinstance(value, int) and not isinstance(value, bool) \
            and kind.base in ("int", "SymInt"):
        return [value] * kind.list_len  # ``int[2] stride=1``
    if isinstance(value, (list, tuple)):
        return [_cast_one(v, kind.base, kind.elem_optional) for v in value]
    raise _CastError


def _type_word(arg: Argument) -> str:
    """The type a wrong-type message names (PyTorch's: ``number`` for a Scalar)."""
    return str(SchemaType(arg.type.base, arg.type.elem_optional, arg.type.list_len))


def bind(schema: FunctionSchema, args: tuple, kwargs: dict) -> list:
    """Checks a call against ``schema`` and returns the value of every argument, defaults
    filled in, in the schema's types (Note [Schema calls]); raises PyTorch's RuntimeError for
    a call that does not fit."""
    name, decl = schema.name, str(schema)
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        if len(positional) < len(schema.arguments):
            raise RuntimeError(f"{name}() takes {len(positional)} positional argument(s) but "
                               f"{len(args)} was/were given.  Declaration: {decl}")
        raise RuntimeError(f"{name}() expected at most {len(positional)} argument(s) but "
                           f"received {len(args)} argument(s). Declaration: {decl}")
    known = {a.name for a in schema.arguments}
    for key in kwargs:
        if key not in known:
            raise RuntimeError(f"Unknown keyword argument '{key}' for operator '{name}'. "
                               f"Schema: {decl}")
    values = []
    for i, arg in enumerate(schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            if arg.name in kwargs:
                raise RuntimeError(f"{name}() got multiple values for argument '{arg.name}'. "
                                   f"Declaration: {decl}")
            value = args[i]
        elif arg.name in kwargs:
            value = kwargs[arg.name]
        elif arg.has_default:
            value = arg.default_value
        else:
            raise RuntimeError(f"{name}() is missing value for argument '{arg.name}'. "
                               f"Declaration: {decl}")
        try:
            values.append(cast(arg, value))
        except _CastError:
            raise RuntimeError(
                f"{name}() Expected a value of type '{_type_word(arg)}' for argument "
                f"'{arg.name}' but instead found type '{_python_type(value)}'.\nPosition: {i}\n"
                f"Value: {value}\nDeclaration: {decl}\nCast error details: Unable to cast "
                f"{value} to {arg.type.base}") from None
    return values


def _is_default(arg: Argument, value) -> bool:
    if not arg.has_default:
        return False
    try:
        default = cast(arg, arg.default_value)
    except _CastError:
        return False
    return type(value) is type(default) and value == default \
        if not isinstance(value, Tensor) else False


def as_given(schema: FunctionSchema, values) -> tuple[tuple, dict]:
    """The positional arguments up to the last that is not its default, and the keyword-only
    ones that are not (what PyTorch hands a Python kernel)."""
    args = [(a, v) for a, v in zip(schema.arguments, values) if not a.kwarg_only]
    while args and _is_default(*args[-1]):
        args.pop()
    kwargs = {a.name: v for a, v in zip(schema.arguments, values)
              if a.kwarg_only and not _is_default(a, v)}
    return tuple(v for _, v in args), kwargs
