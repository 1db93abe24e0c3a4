"""The op registry: every public op is one row of its family's table.

Each family module in autograd/ops/ (elementwise, pointwise, reduction, ...) ends with ``OPS``,
a tuple of :class:`OpInfo` rows. A row names the op (its function, Tensor method, in-place
variant, aliases and Python operators) and says what docs and tools need to know about it
(dtype rule, derivative, FLOP rule, autocast policy); the forward and its ``vjp`` live in the
primitive the function applies, in the same module, usually just above the row
(docs/adding-an-op.md).

From the tables, and only from them, autograd/ops/__init__.py generates

- the package's ``__all__`` (and so ``tritongrad.<op>``),
- Tensor's methods, in-place methods and operators (real attributes of the class, so ``dir``,
  ``help`` and tab completion see them),
- the profiler's FLOP rules (:func:`flop_rule`, read by profiler_util.estimate_flops),
- the op list of docs/ops.md (:func:`markdown`; a test fails when the page is stale), with
  whether forward-mode AD works through each op (``OpInfo.forward_ad``).
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

__all__ = ["FLOP_RULES", "INPLACE_FUNCTIONS", "OpInfo", "check_exact_out", "composite_inplace",
           "export", "flop_rule", "guarded", "install", "markdown", "unguarded", "user_stacklevel",
           "with_inplace", "with_jvp"]

# How the profiler counts an op's FLOPs (profiler_util.estimate_flops): one per output element,
# one per input element, 2 * M * N * K per (broadcast) batch, or that of the product of the
# second and third inputs (addmm, baddbmm: the added input is not counted, as PyTorch's).
FLOP_RULES = ("elementwise", "reduction", "matmul", "addmm")


@dataclass(frozen=True)
class OpInfo:
    """One op: its public names and what docs and tools read about it.

    ``method`` is True for ``Tensor.<name> = fn``, False for no method, or the method itself
    when it differs from the function (``x.where(cond, y)`` reorders ``where``'s arguments).
    ``operators`` are dunder names bound on Tensor: ``__i<op>__`` to the in-place variant,
    ``__r<op>__`` to ``reflected`` (by default the method itself: a commutative op), any
    other to the method. ``aliases`` get the function, the method and (``<alias>_``) the
    in-place variant wherever the op has them. Once the row is made, ``fn`` is the public
    function (``tg.<name>``, ``guarded`` unless ``guard`` is False) and ``impl`` the function
    given, which the method and the family module's name are.
    """

    name: str
    fn: Callable
    method: bool | Callable = True
    function: bool = True
    inplace: Callable | None = None
    aliases: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()
    reflected: Callable | None = None
    flops: str | None = None
    dtypes: str = ""
    grad: str = ""
    node: type | None = None  # the primitive, where one row builds it (docs: the grad_fn)
    # Whether forward-mode AD works through the op (its primitives have ``jvp`` rules):
    # None derives it from ``node`` where the row builds its primitive (see ``forward_ad``).
    jvp: bool | None = None
    # The op's autocast policy (autograd/autocast.py): "lower", "float32", "promote" or
    # "banned", for both device types or per type ("float32 on cuda"); None: not autocast.
    # A row that has one gets its function and method wrapped with the casting entry.
    autocast: str | None = None
    # Whether the public function (``fn``, once the row is made) is ``guarded``: PyTorch's
    # TypeError for an argument of the wrong type (Note [Argument errors after the fact],
    # checks.py). False for a row whose function must stay its method (it checks its own).
    guard: bool = True
    # The ``out=`` keyword the public function adds, for an op whose function has none
    # (``write_out``): "cast" (the result cast to out's dtype where PyTorch's casting allows),
    # "dtype" (computed in out's dtype, as ``dtype=``: sum, cumsum), "exact" (out's dtype
    # must be the result's: PyTorch's structured kernels, matmul, tril) or "same" (as exact,
    # with the error of PyTorch's TensorIterator ops that do not cast: clamp_min, frac);
    # None: none added.
    out: str | None = None
    # What ``fn`` was given as (autocast's entry included): the method, and the function the
    # family module keeps for the ops' own calls, none of which pays for the guard.
    impl: Callable | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.flops is not None and self.flops not in FLOP_RULES:
            raise ValueError(f"OpInfo {self.name}: flops must be one of {FLOP_RULES}, "
                             f"got {self.flops!r}")
        if self.autocast is not None:
            from .autocast import entry  # (loaded here: it needs Tensor, which needs the ops)
            # (a frozen dataclass: the wrapped callables replace the given ones, here)
            # (x.where(...) and 2 ** x are the same op; a row copied by ``replace`` holds
            # callables wrapped already)
            for field in ("fn", "method", "reflected"):
                f = getattr(self, field)
                if callable(f) and getattr(f, "autocast", None) is None:
                    object.__setattr__(self, field, entry(f, self.autocast, self.name))
        impl = unguarded(self.fn)  # (a row copied by ``replace`` holds the guarded function)
        object.__setattr__(self, "impl", impl)
        if self.out is not None and (self.out not in _OUT_FORMS or not self.guard
                                     or "out" in inspect.signature(impl).parameters):
            raise ValueError(f"OpInfo {self.name}: out must be one of {_OUT_FORMS}, for a "
                             f"guarded function without an out parameter of its own")
        if self.guard and self.function:
            object.__setattr__(self, "fn", guarded(impl, self.name, self.name,
                                                   module=_OPS_MODULE, out_form=self.out))

    @property
    def bound(self) -> Callable | None:
        """What ``Tensor.<name>`` is, or None."""
        if self.method is True:
            return self.impl
        return self.method or None

    def names(self) -> tuple[str, ...]:
        return (self.name,) + self.aliases

    @property
    def forward_ad(self) -> str:
        """"yes" or "no" (forward AD through the op), "n/a" for an op with no derivative, ""
        where the row does not say."""
        has = self.jvp
        if has is None and self.node is not None:
            has = self.node.jvp is not None
        if has is None:
            return "n/a" if self.grad == "none" else ""
        return "yes" if has else "no"


_FLOPS: dict[str, str] = {}
_OPS_MODULE = __name__.rsplit(".", 1)[0] + ".ops"  # where ``install`` puts the functions

# The in-place variants PyTorch also exposes as functions (``torch.exp_(x)``): its choice, not a
# rule (``torch.absolute_`` and ``torch.multiply_`` do not exist), so a list. ``install`` binds
# each where a row (under any of its names) has an in-place variant.
INPLACE_FUNCTIONS = frozenset("""
    abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ as_strided_
    asin_ asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ conj_physical_ cos_ cosh_
    deg2rad_ erf_ erfc_ exp2_ exp_ expm1_ fix_ floor_ frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_
    log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ round_ rsqrt_
    sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_""".split())


def export(rows: Iterable[OpInfo], namespace: dict) -> None:
    """Puts each row's function and in-place variant into a family module's namespace under
    all of its names, so ``from .pointwise import sigmoid`` works for generated ops too."""
    for row in rows:
        for n in row.names():
            namespace.setdefault(n, row.impl)
            if row.inplace is not None:
                namespace.setdefault(n + "_", row.inplace)


def install(families: dict[str, tuple[OpInfo, ...]], tensor_cls: type,
            namespace: dict) -> list[str]:
    """Binds every row's methods and operators on ``tensor_cls``, puts its functions in
    ``namespace`` (the ops package's), records FLOP rules, and returns the public function
    names (the package's ``__all__``)."""
    public: list[str] = []
    seen: dict[str, str] = {}
    for family, rows in families.items():
        for row in rows:
            for n in row.names():
                if n in seen:
                    raise ValueError(f"op {n!r} is in both the {seen[n]} and {family} tables")
                seen[n] = family
                if row.function:
                    public.append(n)
                    namespace[n] = row.fn
                if row.bound is not None:
                    setattr(tensor_cls, n, row.bound)
                if row.inplace is not None:
                    setattr(tensor_cls, n + "_", row.inplace)
                    if n + "_" in INPLACE_FUNCTIONS:
                        public.append(n + "_")
                        namespace[n + "_"] = row.inplace
                if row.flops is not None:
                    _FLOPS[n] = row.flops
            for dunder in row.operators:
                setattr(tensor_cls, dunder, _operator(row, dunder, tensor_cls))
    return public


_OUT_FORMS = ("cast", "dtype", "exact", "same")


def write_out(fn: Callable, name: str, form: str, args: tuple, kwargs: dict, out):
    """``fn(*args, **kwargs)`` written into ``out=`` tensor ``out`` as PyTorch's out= form
    of op ``name`` writes it (OpInfo.out's ``form``); returns ``out``."""
    from .ops.elementwise import _result  # (the ops import this module)
    from .storage import _c_type as c_type_name
    from .tensor import Tensor
    given = isinstance(out, Tensor)
    if form == "dtype" and given:
        want = kwargs.get("dtype")
        if want is None:
            kwargs = {**kwargs, "dtype": out.dtype}
        elif want is not out.dtype:  # (PyTorch's check: the result is not cast into out)
            raise RuntimeError(f"Expected out tensor to have dtype {c_type_name(want)}, but "
                               f"got {c_type_name(out.dtype)} instead")
    from .autocast import suspended
    with suspended():  # (PyTorch's out= forms are not autocast: out's dtype is the caller's)
        result = fn(*args, **kwargs)
    if form in ("exact", "same") and given and out.dtype is not result.dtype:
        if form == "same":
            from .ops.elementwise import check_out_dtype
            check_out_dtype(out, result.dtype)  # (its error)
        error = _EXACT_ERRORS.get(name)
        if error is not None:
            from .checks import scalar_type_name
            raise RuntimeError(error.format(want=scalar_type_name(result.dtype),
                                            got=scalar_type_name(out.dtype)))
        check_exact_out(out, result.dtype)
    return _result(result, out, name)


# The ops whose kernels refuse an out= of another dtype in words of their own (the others say
# check_exact_out's): "want" is the result's dtype, "got" out's (PyTorch's names: Float).
_EXACT_ERRORS = {
    **dict.fromkeys(("amax", "amin"), "Expected the dtype for input and out to match, but got "
                    "{want} for input's dtype and {got} for out's dtype."),
    **{op: op + "(): self and result must have the same scalar type"
       for op in ("index_select", "masked_select")},
}


_LIBRARY_DIRS: tuple = ()


def _library_dirs() -> tuple:
    """This package's folder and the top-level package's (one folder holding both in an
    installed wheel; the checkout's autograd/ and tritongrad/ in an editable install)."""
    global _LIBRARY_DIRS
    if not _LIBRARY_DIRS:
        top = sys.modules.get("tritongrad")
        dirs = [os.path.dirname(os.path.abspath(__file__))]
        if top is not None and getattr(top, "__file__", None):
            dirs.append(os.path.dirname(os.path.abspath(top.__file__)))
        _LIBRARY_DIRS = tuple(d + os.sep for d in dirs)
    return _LIBRARY_DIRS


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` in the function calling this that names the
    first frame outside the library (the user's call, however deep the op's wrappers: guard,
    out=, observers), as PyTorch's warnings from C++ do. Walks the stack: for warnings only."""
    dirs = _library_dirs()
    f, level = sys._getframe(1), 1
    while f is not None and f.f_code.co_filename.startswith(dirs):
        f, level = f.f_back, level + 1
    return level


def check_exact_out(out, dtype) -> None:
    """PyTorch's refusal of an ``out=`` tensor whose dtype is not ``dtype``, the result's, for
    the ops that write into out without casting (OpInfo.out's "exact")."""
    if getattr(out, "dtype", dtype) is not dtype:  # (not a tensor: _result's TypeError)
        from .storage import _c_type as c_type_name
        raise RuntimeError(f"Expected out tensor to have dtype {c_type_name(dtype)}, but got "
                           f"{c_type_name(out.dtype)} instead")


def _sparse_method(name: str, args: tuple):
    """The method ``name`` of a sparse first argument's class where it has its own (the
    dense function refused it; PyTorch's functions dispatch on the layout), else None; for
    the joining functions and the ``*_like`` factories (``cat([s, t])``, ``zeros_like(s)``)
    the sparse version, ``sparse_ops.sparse_function``."""
    from .sparse import SparseBase
    from .sparse_ops import sparse_function
    from .tensor import Tensor
    fn = sparse_function(name, args)
    if fn is not None:
        return fn
    if not args or not isinstance(args[0], SparseBase):
        return None
    method = getattr(type(args[0]), name, None)
    return None if method is None or method is getattr(Tensor, name, None) else method


def guarded(fn: Callable, name: str, canonical: str | None = None, rename: bool = False,
            module: str | None = None, attr: str | None = None,
            out_form: str | None = None) -> Callable:
    """Public function ``name`` (``tg.<name>``; ``canonical``: the name ``fn``'s own errors
    use, when it differs) running ``fn``, whose errors from an argument of the wrong type are
    PyTorch's TypeError naming the op, the argument and the type (checks.argument_error, Note
    [Argument errors after the fact]), not the AttributeError or NumPy error they cause inside.

    The check runs only when ``fn`` raises: a ``try`` costs nothing until then (Python 3.11+),
    so a call pays one frame. An op row's method and operators, and the name its family module
    keeps for the ops' own calls, are ``OpInfo.impl``, unguarded (their ``self`` is a Tensor
    already), so ``x.exp()`` and ``x * y`` pay nothing. A non-function
    (a class) is returned as it is, and so is a function guarded already, unless ``rename``:
    then it is guarded anew under ``name`` (``tg.special.expit``, whose errors name
    ``special_expit`` as PyTorch's do, is ``tg.sigmoid``'s function). ``module``: the module
    the function is put in, under ``attr`` (default ``name``), so that pickle finds it there
    (not ``fn``). ``out_form``: the function takes ``out=`` too (OpInfo.out, ``write_out``).
    """
    if not isinstance(fn, types.FunctionType):
        return fn
    if getattr(fn, "guarded", False):
        if not rename or name == fn.__name__:
            return fn
        fn, canonical = fn.__wrapped__, fn.canonical
    canonical = canonical or fn.__name__

    def failed(e: Exception, args: tuple, kwargs: dict):
        from .overrides import redispatch
        # (a tensor-like object that overrides, before any dispatch check is installed:
        # Note [Overrides installed on first use])
        result = redispatch(op, args, kwargs)
        if result is not NotImplemented:
            return result
        method = _sparse_method(name, args)
        if method is not None:  # tg.abs(s): the sparse layout's own method, as s.abs()
            return method(*args, **kwargs)
        from .checks import argument_error
        error = argument_error(e, fn, name, canonical, args, kwargs)
        if error is None:
            raise e
        # (from None: the NumPy frames deep inside are no help to the caller; the error
        # being replaced stays on __context__ for whoever debugs the op)
        raise error from None

    if out_form is None:
        @functools.wraps(fn)
        def op(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                return failed(e, args, kwargs)
    else:
        @functools.wraps(fn)
        def op(*args, out=None, **kwargs):
            try:
                if out is None:
                    return fn(*args, **kwargs)
                return write_out(fn, name, out_form, args, kwargs, out)
            except Exception as e:
                return failed(e, args, kwargs if out is None else {**kwargs, "out": out})
    op.guarded, op.canonical = True, canonical
    if name != fn.__name__:
        op.__name__ = name
    if module is not None:  # (pickled by reference: to be found as itself, not as ``fn``)
        op.__module__, op.__qualname__ = module, attr or name
    return op


def unguarded(fn: Callable) -> Callable:
    """The function ``guarded`` wrapped (``unguarded(tg.exp) is tg.Tensor.exp``), or ``fn``."""
    return fn.__wrapped__ if getattr(fn, "guarded", False) else fn


# The binary operators, whose __i*__ and __r*__ forms are in-place and reflected.
_BINARY_STEMS = frozenset(["add", "sub", "mul", "truediv", "div", "floordiv", "mod", "pow",
                           "matmul", "and", "or", "xor", "lshift", "rshift"])


def _operator(row: OpInfo, dunder: str, tensor_cls: type) -> Callable:
    stem = dunder[2:-2]
    if stem.startswith("i") and stem[1:] in _BINARY_STEMS:
        if row.inplace is None:
            raise ValueError(f"OpInfo {row.name}: {dunder} needs an in-place variant")
        return row.inplace
    if stem.startswith("r") and stem[1:] in _BINARY_STEMS:
        return row.reflected or row.bound or row.fn
    if stem in ("eq", "ne"):
        return _equality(row.bound or row.fn, dunder, tensor_cls)
    if stem == "invert":
        return _invert(row.bound or row.fn)
    return row.bound or row.fn


def _invert(bitwise_not: Callable) -> Callable:
    """``~`` as PyTorch's operator: ``bitwise_not``, but a floating-point or complex tensor
    gets the operator's TypeError (``bitwise_not`` itself raises its not-implemented
    RuntimeError)."""
    def __invert__(self):
        if self._dtype.is_floating_point or self._dtype.is_complex:
            raise TypeError("~ (operator.invert) is only implemented on integer and "
                            "Boolean-type tensors")
        return bitwise_not(self)
    return __invert__


def _equality(compare: Callable, dunder: str, tensor_cls: type) -> Callable:
    """``==`` / ``!=`` as PyTorch's operators: elementwise against a tensor or a number, and
    NotImplemented for what the comparison refuses (a string, a list, None), so Python falls
    back to identity (``x == "auto"`` is False, ``x != None`` True) instead of raising
    (``tg.eq(x, "auto")`` still raises PyTorch's TypeError)."""
    def operator(self, other):
        try:
            return compare(self, other)
        except TypeError:
            if isinstance(other, tensor_cls):
                raise
            return NotImplemented
    operator.__name__ = dunder
    return operator


def flop_rule(name: str) -> str | None:
    """The FLOP rule (one of :data:`FLOP_RULES`) of op ``name`` or its in-place form."""
    return _FLOPS.get(name) or _FLOPS.get(name.removesuffix("_"))


def with_jvp(rows: tuple[OpInfo, ...], without: Iterable[str] = ()) -> tuple[OpInfo, ...]:
    """``rows`` with ``jvp=True`` on each differentiable row that does not say (a family whose
    primitives all have ``jvp`` rules), except the ops named in ``without``, marked False.
    tests/autograd/test_forward_ad.py runs every row's claim."""
    without = frozenset(without)
    return tuple(row if row.jvp is not None or (row.node is not None and row.name not in without)
                 or row.grad == "none" else replace(row, jvp=row.name not in without)
                 for row in rows)


def composite_inplace(method: Callable, name: str) -> Callable:
    """``x.<name>_(*args)`` for a composite op whose method is ``method``: ``method(x, *args)``
    written into ``x`` by ``copy_`` (composite.write_result: same shape, no float into an
    integer tensor), so the version bump, the leaf and view checks and the rewritten history
    are copy_'s. Where autograd records, the op reads a copy of ``x`` (PyTorch's
    ``original_self``): its parts may save ``x`` for backward, and the write would make what
    they saved stale."""
    def inplace(self, *args, **kwargs):
        from .checks import tensor_arg
        from .dispatch import check_inplace
        tensor_arg(self, name + "_")
        from .ops.composite import write_result
        from .state import state
        src = self
        if state.grad_enabled and (self.requires_grad or any(
                getattr(a, "requires_grad", False) for a in (*args, *kwargs.values()))):
            check_inplace(self, True)  # (before computing: the leaf's error, as PyTorch's)
            src = self.clone()
        return write_result(self, method(src, *args, **kwargs), name + "_")
    inplace.__name__ = inplace.__qualname__ = name + "_"
    inplace.__doc__ = f"In-place ``{name}``."
    return inplace


def with_inplace(rows: tuple[OpInfo, ...], names: Iterable[str]) -> tuple[OpInfo, ...]:
    """``rows`` with the in-place variant (``composite_inplace`` of the row's method) on each
    composite row named in ``names``; a row that has one already is refused."""
    names = frozenset(names)
    out = []
    for row in rows:
        if row.name in names:
            if row.inplace is not None:
                raise ValueError(f"OpInfo {row.name}: has an in-place variant already")
            row = replace(row, inplace=composite_inplace(row.bound or row.impl, row.name))
        out.append(row)
    missing = names - {row.name for row in rows}
    if missing:
        raise ValueError(f"with_inplace: no rows named {sorted(missing)}")
    return tuple(out)


def markdown(families: dict[str, tuple[OpInfo, ...]]) -> str:
    """The op list of docs/ops.md: one table per family."""
    out = [("The *forward AD* column: `yes`, the op's primitives have `jvp` rules (forward-mode "
            "AD, docs/autograd.md); `no`, a tangent reaching it raises \"Trying to use forward "
            "AD with <op> that does not support it\"; `n/a`, no derivative; empty, the row "
            "does not say (a composite works where its parts do). The *autocast* column: the "
            "dtype the op runs in inside an autocast region (docs/training.md, Mixed "
            "precision): `lower` (the region's float16 or bfloat16), `float32`, `promote` (the "
            "widest input dtype), `banned` (refused), for both device types or the one named."),
           ""]
    for family, rows in families.items():
        out += [f"### {family}", "",
                ("| op | Tensor | in place | dtypes | gradient | grad_fn | FLOPs | forward AD "
                 "| autocast |"),
                "|---|---|---|---|---|---|---|---|---|"]
        for row in sorted(rows, key=lambda r: r.name):
            names = ", ".join(f"`{n}`" for n in row.names())
            method = ["method"] if row.bound is not None else []
            method += [f"`{o}`" for o in row.operators]
            if not row.function:
                names += " (no function)"
            inplace = f"`{row.name}_`" if row.inplace is not None else ""
            functions = [f"`{n}_`" for n in row.names() if row.inplace is not None
                         and n + "_" in INPLACE_FUNCTIONS]
            if functions:  # (also a function: torch.exp_(x))
                inplace += f" (function: {', '.join(functions)})"
            node = f"`{row.node.__name__}`" if row.node is not None else ""
            out.append(f"| {names} | {', '.join(method)} | {inplace} | {row.dtypes} | "
                       f"{row.grad} | {node} | {row.flops or ''} | {row.forward_ad} | "
                       f"{row.autocast or ''} |")
        out.append("")
    return "\n".join(out)
