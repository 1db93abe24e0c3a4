"""``einsum``: Einstein summation over an equation, as products of the matrix primitives.

The equation is parsed into one list of labels per operand and one for the output (letters
are their code points, the dims an ellipsis covers are the negative labels ``-E .. -1``,
right-aligned as broadcasting aligns them). Each operand then takes the diagonal of any label
it repeats and sums the labels nobody else needs; the operands are contracted left to right,
two at a time, each pair as one ``bmm`` over (batch labels, kept labels, summed labels), or
one broadcast ``mul`` when nothing is summed. Labels of size 1 broadcast against the other
operands' sizes. Everything is views, ``sum``, ``mul`` and ``bmm``, so both backends run it
and the gradient comes through them.
"""

from __future__ import annotations

import math
import string

from ..checks import expected_scalar_type
from ..registry import OpInfo
from ..tensor import Tensor
from .combinations import diagonal
from .elementwise import mul
from .linalg import bmm
from .reduction import sum

_ELLIPSIS = "..."


def _letters(term: str, at: int, operand: int) -> list:
    """The labels of one term (code points; None for its ellipsis); ``at`` is the term's
    position in the equation, for errors."""
    out, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != _ELLIPSIS:
                raise RuntimeError(f"einsum(): found '.' for operand {operand} that is not part "
                                   f"of any ellipsis")
            if None in out:
                raise RuntimeError(f"einsum(): found '.' for operand {operand} for which an "
                                   f"ellipsis was already found")
            out.append(None)
            i += 3
            continue
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            raise RuntimeError(f"einsum(): invalid subscript given at index {at + i} in the "
                               f"equation string, subscripts must be in [a-zA-Z]")
        out.append(ord(c))
        i += 1
    return out


def _expand_ellipsis(labels: list, n: int) -> list:
    """``labels`` with the ellipsis replaced by the ``n`` labels -n .. -1."""
    if None not in labels:
        return labels
    i = labels.index(None)
    return labels[:i] + list(range(-n, 0)) + labels[i + 1:]


def _name(label: int) -> str:
    return chr(label) if label >= 0 else _ELLIPSIS


def _parse(equation: str, operands: tuple) -> tuple:
    """(one label list per operand, the output's labels)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms, at = [], 0
    for i, term in enumerate(lhs.split(",")):
        if i >= len(operands):
            raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                               "equation")
        terms.append(_letters(term, at, i))
        at += len(term) + 1
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    ell = 0
    for i, (labels, x) in enumerate(zip(terms, operands)):
        named = len(labels) - (None in labels)
        if None in labels:
            if named > x.ndim:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({named}) is more than the number of dimensions "
                                   f"({x.ndim}) for operand {i}")
            ell = max(ell, x.ndim - named)
        elif named != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) "
                               f"does not match the number of dimensions ({x.ndim}) for "
                               f"operand {i} and no ellipsis was given")
    terms = [_expand_ellipsis(labels, x.ndim - len(labels) + 1) for labels, x in
             zip(terms, operands)]
    counts: dict = {}
    for labels in terms:
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
    if not arrow:  # implicit output: the ellipsis, then the labels used once, in ASCII order
        return terms, list(range(-ell, 0)) + sorted(l for l, n in counts.items()
                                                     if n == 1 and l >= 0)
    out = _letters(rhs, len(lhs) + 2, len(operands))
    for j, label in enumerate(out):
        if label is None:
            continue
        if label in out[:j]:
            raise RuntimeError(f"einsum(): output subscript {chr(label)} appears more than once "
                               f"in the output")
        if label not in counts:
            raise RuntimeError(f"einsum(): output subscript {chr(label)} does not appear in the "
                               f"equation for any input operand")
    return terms, _expand_ellipsis(out, ell)


def _sizes(terms: list, operands: tuple) -> dict:
    """The size of every label, checking repeats within an operand and broadcasting across."""
    sizes: dict = {}
    for i, (labels, x) in enumerate(zip(terms, operands)):
        own: dict = {}
        for label, n in zip(labels, x.shape):
            if own.setdefault(label, n) != n:
                raise RuntimeError(f"einsum(): subscript {_name(label)} is repeated for operand "
                                   f"{i} but the sizes don't match, {n} != {own[label]}")
        for label, n in own.items():
            seen = sizes.get(label, n)
            if seen != n and 1 not in (seen, n):
                if label < 0:  # (an ellipsis dim: PyTorch names its dim in the operand)
                    at = labels.index(label)
                    raise RuntimeError(f"einsum(): dimension {at} covered by ellipsis in operand "
                                       f"{i} has size {n} which does not broadcast with "
                                       f"previously seen ellipsis with size {seen} for the "
                                       f"respective dimension")
                raise RuntimeError(f"einsum(): subscript {_name(label)} has size {n} for "
                                   f"operand {i} which does not broadcast with previously seen "
                                   f"size {seen}")
            sizes[label] = n if seen == 1 else seen
    return sizes


def _distinct(x: Tensor, labels: list) -> tuple:
    """``x`` with each repeated label reduced to its diagonal (a view)."""
    labels = list(labels)
    while len(set(labels)) < len(labels):
        label = next(l for i, l in enumerate(labels) if l in labels[:i])
        first = labels.index(label)
        second = labels.index(label, first + 1)
        x = diagonal(x, 0, first, second)
        labels = [l for i, l in enumerate(labels) if i not in (first, second)] + [label]
    return x, labels


def _sum_out(x: Tensor, labels: list, keep) -> tuple:
    """``x`` summed over the labels not in ``keep``."""
    dims = tuple(i for i, l in enumerate(labels) if l not in keep)
    if not dims:
        return x, labels
    return sum(x, dims), [l for l in labels if l in keep]


def _arrange(x: Tensor, labels: list, order: list, sizes: dict) -> Tensor:
    """``x`` with its dims in the order of ``order`` and size-1 labels broadcast."""
    x = x.permute(tuple(labels.index(l) for l in order))
    full = tuple(sizes[l] for l in order)
    return x if tuple(x.shape) == full else x.expand(full)


def _contract(a: Tensor, la: list, b: Tensor, lb: list, keep: set, sizes: dict) -> tuple:
    """The product of two labelled operands over their shared labels not in ``keep``."""
    a, la = _sum_out(a, la, keep | set(lb))
    b, lb = _sum_out(b, lb, keep | set(la))
    batch = [l for l in la if l in lb and l in keep]
    summed = [l for l in la if l in lb and l not in keep]
    left = [l for l in la if l not in lb]
    right = [l for l in lb if l not in la]

    def size(group):
        return math.prod(sizes[l] for l in group)

    nb, nl, ns, nr = size(batch), size(left), size(summed), size(right)
    a = _arrange(a, la, batch + left + summed, sizes).reshape(nb, nl, ns)
    b = _arrange(b, lb, batch + summed + right, sizes).reshape(nb, ns, nr)
    out = batch + left + right
    # nothing summed (or a sum over one element): a broadcast product, no matmul needed
    product = mul(a, b) if ns == 1 else bmm(a, b)
    return product.reshape(tuple(sizes[l] for l in out)), out


def einsum(equation: str, *operands) -> Tensor:
    """Sums the product of the operands' elements over the indices the ``equation`` names
    (NumPy's and PyTorch's notation): ``"ij,jk->ik"`` is a matrix product, ``"ii"`` a trace,
    ``"...ij->...ji"`` a batched transpose. Without ``->`` the output holds the ellipsis
    dims, then the labels used once, in alphabetical order (upper case first). Dims of size 1
    broadcast. The operands may also be passed as one list, or in the sublist format:
    ``einsum(x, [0, 1], y, [1, 2], [0, 2])`` (each operand followed by its subscripts, ints in
    [0, 52) or ``...``, then optionally the output's).

    Example:
        >>> tg.einsum("ij,j->i", tg.ones(2, 3), tg.tensor([1., 2., 3.]))
        tensor([6., 6.])
    """
    if not operands:  # (einsum("ij") or einsum(x): PyTorch's ValueError)
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if not isinstance(equation, str):  # the sublist format: einsum(x, [0, 1], y, [1, 2], [0, 2])
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): expected Tensor as element {i} in argument 1, but got "
                            f"{type(x).__name__}")
        if x.dtype is not operands[0].dtype:  # (no promotion, as PyTorch's)
            raise expected_scalar_type(operands[0].dtype, x.dtype)
    terms, output = _parse(equation, operands)
    sizes = _sizes(terms, operands)
    pieces = [_distinct(x, labels) for x, labels in zip(operands, terms)]
    x, labels = pieces[0]
    later = [set(l) for _, l in pieces]
    x, labels = _sum_out(x, labels, set(output).union(*later[1:]))
    for k in range(1, len(pieces)):
        keep = set(output).union(*later[k + 1:])
        x, labels = _contract(x, labels, *pieces[k], keep, sizes)
    x, labels = _sum_out(x, labels, set(output))
    return _arrange(x, labels, output, sizes)


_SUBSCRIPTS = string.ascii_uppercase + string.ascii_lowercase  # the sublist format's 0-51


def _sublist_equation(args: tuple) -> tuple:
    """(equation, operands) of einsum's sublist format: operands each followed by a list of
    subscripts (ints in [0, 52): 0-25 are ``A``-``Z``, 26-51 ``a``-``z``, as PyTorch's; and
    ``...``), then optionally the output's list."""
    def term(sublist) -> str:
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
            elif not isinstance(s, int) or isinstance(s, bool):
                raise TypeError(f"einsum(): subscripts must be ints or ..., got "
                                f"{type(s).__name__}")
            elif not 0 <= s < 52:
                raise ValueError("einsum(): subscript in subscript list is not within the "
                                 "valid range [0, 52)")
            else:
                out.append(_SUBSCRIPTS[s])
        return "".join(out)

    pairs = len(args) - len(args) % 2  # (an odd count ends with the output's sublist)
    operands, terms = args[0:pairs:2], args[1:pairs:2]
    for sublist in terms:
        if not isinstance(sublist, (list, tuple)):
            raise TypeError(f"einsum(): in the sublist format each operand must be followed by "
                            f"a list of subscripts, got {type(sublist).__name__}")
    equation = ",".join(term(t) for t in terms)
    if len(args) % 2:
        if not isinstance(args[-1], (list, tuple)):
            raise TypeError(f"einsum(): the sublist format ends with an operand's subscripts "
                            f"or the output's, got {type(args[-1]).__name__}")
        equation += "->" + term(args[-1])
    return equation, operands


OPS = (
    OpInfo("einsum", einsum, method=False, dtypes="one dtype (bmm's)",
           grad="einsum of g with the other operands", autocast="lower"),
)
