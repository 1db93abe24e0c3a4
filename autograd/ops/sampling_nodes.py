"""One node each for nn.functional ops that are compositions of Tensor ops (sampling, pooling,
unfold/fold, margin losses, bilinear), saving what PyTorch's node saves (or less).

Recorded as it runs, a composite is many nodes each keeping its own operands: ``grid_sample``
kept its gathered corners and weights (2.5 times the bytes of PyTorch's node, which saves the
input and the grid), ``multilabel_margin_loss`` its (N, P, C) hinge mask (80 times), an
adaptive pool or an ``'area'`` resize the intermediate of each separable step. Here the
composite is the forward, run unrecorded on the inputs' arrays (Note [Composite forwards,
one node] of special.py), and one node is recorded, named as PyTorch's, in one of two forms:

- ``LinearComposite``: an op linear in its one input (every ``interpolate`` mode, the
  adaptive average pools, ``unfold`` and ``fold``) saves nothing; its rule is the op's
  transpose applied to the gradient (written out where the caller gives it: the resize's
  index_add, the pools' transposed averaging matrices, fold for unfold; otherwise the
  composite's own backward, run from a zero input, as a linear map's vjp does not read the
  point), its jvp the op applied to the tangent.
- ``Recomputed``: any other op saves the inputs PyTorch's node saves; its rule is a closed
  form where the caller gives one (``multi_margin_loss``), otherwise, in backward, the
  composite runs again, recorded, to take its vjp (Note [Recomputed rules]: grid_sample,
  multilabel_margin_loss).

Both rules are written over the kernel contract's two cases: on backend arrays (the common,
unrecorded backward) the composite runs on Tensors made from them and gives arrays back; on
Tensors (``k`` is ``ops.traced``: ``create_graph=True``) it is recorded, so the rule is
differentiable again and double backward comes through the composite's own parts. The dtype
handling (half precision computed as the composite computes it) and the errors are the
composite's, checked by the public function before the node is made.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from typing import NamedTuple

from ..autocast import autocast, is_autocast_enabled
from ..dispatch import Primitive, apply, linear_jvp
from ..grad_mode import enable_grad, no_grad
from ..layout import channels_last_order, laid_out
from ..tensor import Tensor, make

__all__ = ["Composite", "LinearComposite", "Recomputed", "TrilinearBackward0", "linear_node",
           "recomputed_node"]

# Note [Recomputed rules]: a node whose backward recomputes its forward keeps only the
# inputs (PyTorch's saved tensors: grid_sample's input and grid, multilabel_margin_loss's input
# and target) and trades one more forward of the composite in backward for the intermediates
# the composite's nodes kept from forward to backward. The recomputation lives only during
# the node's rule: its nodes and their saved tensors are freed when the rule returns, so the
# peak of a training step is no higher than the composite's. Its vjp is ``autograd.grad`` of
# the recomputed output (a re-entrant backward, as a checkpointed region's); its jvp is the
# transpose of that vjp (the vjp is linear in the gradient u, so d/du <vjp(u), t> = J t).


@contextmanager
def _one_op():
    """Autocast off inside a node's forward and rules: to autocast the node is one op (its
    policy, if PyTorch lists it, applies at the public function), so the matmuls and sums it
    is made of are not cast, and a backward run inside an autocast region computes in the
    saved tensors' dtypes, as the array rules of other nodes do."""
    with ExitStack() as stack:
        for device_type in ("cpu", "cuda"):
            if is_autocast_enabled(device_type):
                stack.enter_context(autocast(device_type, enabled=False))
        yield


def _tensors(arrays) -> list:
    return [a if a is None or isinstance(a, Tensor) else make(a) for a in arrays]


def _arrays(out):
    if isinstance(out, tuple):
        return tuple(None if o is None else o._data for o in out)
    return out._data


class Composite(NamedTuple):
    """A node's composite: ``fn(*inputs, *params)`` in Tensor ops and, for a linear one, its
    ``transpose(g, input_shape, *params)`` (None: the composite's own backward is taken), or
    for a Recomputed one its ``rule(g, needs, *inputs, *params)``, the gradients of the
    inputs ``needs`` flags (None: the recomputed composite's vjp)."""

    fn: Callable
    transpose: Callable | None = None
    rule: Callable | None = None


class _Composite(Primitive):
    """A composite as one node: ``apply(Node, inputs, Composite(fn), *params)``; its forward
    runs ``fn`` unrecorded."""

    __slots__ = ()

    @staticmethod
    def forward(ctx, k, *args):
        n = next(i for i, a in enumerate(args) if type(a) is Composite)
        spec, params = args[n], args[n + 1:]
        ctx.fn, ctx.params, ctx.shapes = spec.fn, params, [tuple(a.shape) for a in args[:n]]
        ctx.transpose, ctx.rule = spec.transpose, spec.rule
        with no_grad(), _one_op():
            return _arrays(spec.fn(*_tensors(args[:n]), *params))


class LinearComposite(_Composite):
    """An op linear in its one input: nothing saved; the rule is the composite's transpose
    applied to ``g``, the jvp the op applied to the tangent.

    ``grad_layout`` (a class attribute of the resampling nodes) gives the memory formats of
    PyTorch's kernels: the result in the one the input's strides suggest (channels-last or
    row-major), the input gradient in the one ``"input"``'s or ``"grad"``'s (the output
    gradient's) strides suggest. None: the composite's own layouts."""

    __slots__ = ()
    jvp = linear_jvp()
    grad_layout = None

    @staticmethod
    def forward(ctx, k, *args):
        out = _Composite.forward(ctx, k, *args)
        if getattr(ctx, "grad_layout", None) is None:
            return out
        ctx.order = order = channels_last_order(k, args[0])
        return laid_out(k, out, order)

    @staticmethod
    def vjp(ctx, k, saved, g):
        recorded = isinstance(g, Tensor)
        gt = g if recorded else make(g)
        if ctx.transpose is not None:
            if recorded:
                with _one_op():
                    return ctx.transpose(gt, ctx.shapes[0], *ctx.params)
            with no_grad(), _one_op():
                gx = ctx.transpose(gt, ctx.shapes[0], *ctx.params)
        else:
            with enable_grad(), _one_op():
                z = gt.new_zeros(ctx.shapes[0]).requires_grad_()
                y = ctx.fn(z, *ctx.params)
                (gx,) = _grad(y, (z,), gt, recorded)
            if recorded:
                return gx
        rule = ctx.grad_layout
        if rule is None:
            return gx._data
        if rule == "input":  # (a global pool is PyTorch's mean: its gradient is row-major)
            order = None if all(n == 1 for n in g.shape[2:]) else ctx.order
        else:
            order = channels_last_order(k, g)
        return laid_out(k, gx._data, order)


def _grad(y: Tensor, xs, g: Tensor, create_graph: bool) -> tuple:
    from ..engine import grad
    got = grad(y, xs, g, create_graph=create_graph, allow_unused=True)
    return tuple(x.new_zeros(x.shape) if d is None else d for x, d in zip(xs, got))


class Recomputed(_Composite):
    """An op saving its inputs ``save_inputs`` (PyTorch's; each differentiable input among
    them) and applying its closed-form rule, or recomputing the composite in backward (Note
    [Recomputed rules]). Inputs not saved must be ones the rule does not read."""

    __slots__ = ()

    @classmethod
    def vjp(cls, ctx, k, saved, g):
        recorded = isinstance(g, Tensor)
        needs = ctx.needs_input_grad
        if ctx.rule is not None:  # the closed form: nothing recomputed
            xs = [None] * len(needs)
            for pos, s in zip(cls.save_inputs, saved):
                xs[pos] = s
            if recorded:
                with _one_op():
                    return tuple(ctx.rule(g, needs, *xs, *ctx.params))
            with no_grad(), _one_op():
                got = ctx.rule(make(g), needs, *_tensors(xs), *ctx.params)
            return tuple(None if d is None else d._data for d in got)
        with enable_grad(), _one_op():
            xs, wanted = cls._operands(_tensors(saved), needs, recorded)
            y = ctx.fn(*xs, *ctx.params)
            got = iter(_grad(y, [xs[i] for i in wanted], g if recorded else make(g), recorded))
        out = []
        for i in range(len(needs)):
            d = next(got) if i in wanted else None
            out.append(d if recorded or d is None else d._data)
        return tuple(out) if len(out) > 1 else out[0]

    @classmethod
    def _operands(cls, saved: list, needs: tuple, recorded: bool) -> tuple:
        """The composite's inputs (the saved ones at their positions) and the positions whose
        gradient is wanted, each a Tensor requiring grad (a fresh leaf where it does not)."""
        xs = [None] * len(needs)
        for pos, s in zip(cls.save_inputs, saved):
            xs[pos] = s
        wanted = [i for i, need in enumerate(needs) if need]
        for i in wanted:
            x = xs[i]
            if not (recorded and x.requires_grad):
                xs[i] = x.detach().requires_grad_()
        return xs, wanted

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        spec, params = params[0], params[1:]
        if spec.rule is not None:  # d/du <rule(u), t>, the rule being linear in u
            with enable_grad(), _one_op():
                keep = any(t is not None and t.requires_grad for t in tangents) or any(
                    p is not None and p.requires_grad for p in primals)
                u = out.detach().new_zeros(out.shape).requires_grad_()
                needs = tuple(t is not None for t in tangents)
                ds = spec.rule(u, needs, *primals, *params)
                terms = [(d, t) for d, t in zip(ds, tangents) if t is not None and d is not None]
                (jt,) = _grad_sum([d for d, _ in terms], u, [t for _, t in terms], keep)
            return jt
        fn = spec.fn
        with enable_grad(), _one_op():
            keep = any(p is not None and p.requires_grad for p in primals) or any(
                t is not None and t.requires_grad for t in tangents)
            xs, wanted = list(primals), []
            for i, (p, t) in enumerate(zip(primals, tangents)):
                if t is not None:
                    wanted.append(i)
                    if not p.requires_grad:
                        xs[i] = p.detach().requires_grad_()
            y = fn(*xs, *params)
            u = y.detach().new_zeros(y.shape).requires_grad_()
            from ..engine import grad
            vj = grad(y, [xs[i] for i in wanted], u, create_graph=True, allow_unused=True)
            terms = [(d, tangents[i]) for d, i in zip(vj, wanted) if d is not None]
            if not terms:
                return y.detach().new_zeros(y.shape)
            (jt,) = _grad_sum([d for d, _ in terms], u, [t for _, t in terms], keep)
        return jt


def _grad_sum(ds, u: Tensor, ts, create_graph: bool) -> tuple:
    """d/du sum_i <ds_i(u), ts_i>: the transposed vjp applied to the tangents."""
    from ..engine import grad
    got = grad(ds, (u,), ts, create_graph=create_graph, allow_unused=True)
    return tuple(u.new_zeros(u.shape) if d is None else d for d in got)


def linear_node(node: type, x: Tensor, fn, *params, transpose=None) -> Tensor:
    """``fn(x, *params)``, linear in ``x``, recorded as one ``node`` (a LinearComposite);
    ``transpose(g, x.shape, *params)`` its vjp, where given."""
    return apply(node, (x,), Composite(fn, transpose), *params)


def recomputed_node(node: type, inputs: tuple, fn, *params, rule=None) -> Tensor:
    """``fn(*inputs, *params)`` recorded as one ``node`` (a Recomputed); ``rule(g, needs,
    *inputs, *params)`` its closed-form vjp, where given (nothing is then recomputed)."""
    return apply(node, tuple(inputs), Composite(fn, None, rule), *params)


# -- the nodes, named as PyTorch's -----------------------------------------------------------

AdaptiveAvgPool2DBackward0 = LinearComposite.variant("AdaptiveAvgPool2DBackward0",
                                                     "adaptive_avg_pool2d", grad_layout="input")
AdaptiveAvgPool3DBackward0 = LinearComposite.variant("AdaptiveAvgPool3DBackward0",
                                                     "adaptive_avg_pool3d")
Im2ColBackward0 = LinearComposite.variant("Im2ColBackward0", "im2col")  # F.unfold
Col2ImBackward0 = LinearComposite.variant("Col2ImBackward0", "col2im")  # F.fold
# F.interpolate's nodes: (mode, spatial dims, antialias) -> PyTorch's name; PyTorch 2.13's CPU
# kernels give the input gradient in the output gradient's memory format for the 2-D nearest
# and bilinear modes and trilinear, row-major for the others (bicubic, 3-D nearest). Its
# adaptive average pools: 2-D in the input's format (but a global pool, a mean, row-major), 3-D
# row-major.
UPSAMPLE = {(mode, nd, aa): LinearComposite.variant(
    f"Upsample{name}{nd}D{'Aa' if aa else ''}Backward0",
    f"{'_' if aa else ''}upsample_{mode.replace('-', '_')}{nd}d{'_aa' if aa else ''}",
    grad_layout="grad" if (nd == 2 and mode != "bicubic") or mode == "trilinear" else None)
    for mode, name, dims in (("nearest", "Nearest", (1, 2, 3)),
                             ("nearest-exact", "NearestExact", (1, 2, 3)),
                             ("linear", "Linear", (1,)), ("bilinear", "Bilinear", (2,)),
                             ("bicubic", "Bicubic", (2,)), ("trilinear", "Trilinear", (3,)))
    for nd in dims for aa in ((False, True) if mode in ("bilinear", "bicubic") else (False,))}
GridSampler2DBackward0 = Recomputed.variant("GridSampler2DBackward0", "grid_sampler_2d",
                                            save_inputs=(0, 1))
GridSampler3DBackward0 = Recomputed.variant("GridSampler3DBackward0", "grid_sampler_3d",
                                            save_inputs=(0, 1))
MultiMarginLossBackward0 = Recomputed.variant("MultiMarginLossBackward0", "multi_margin_loss",
                                              save_inputs=(0, 1))
MultilabelMarginLossBackward0 = Recomputed.variant("MultilabelMarginLossBackward0",
                                                   "multilabel_margin_loss", save_inputs=(0, 1))


# -- bilinear: its own rule ------------------------------------------------------------------

def _einsum(spec: str, *xs):
    """einsum over a rule's operands: recorded on Tensors, unrecorded on backend arrays."""
    from .contraction import einsum
    if any(isinstance(x, Tensor) for x in xs):
        with _one_op():
            return einsum(spec, *_tensors(xs))
    with no_grad(), _one_op():
        return einsum(spec, *_tensors(xs))._data


class TrilinearBackward0(Primitive):
    """y[..., o] = sum_ij x1[..., i] A[o, i, j] x2[..., j] (``F.bilinear`` without its bias,
    PyTorch's ``_trilinear``), saving x1, A and x2 as PyTorch's node:
    dx1 = g A x2, dx2 = g A^T x1, dA = sum over the batch of g x1 x2 (outer products).
    The einsums were recorded one contraction at a time, keeping their intermediates."""

    __slots__ = ()
    op_name = "_trilinear"
    save_inputs = (0, 1, 2)

    @staticmethod
    def forward(ctx, k, x1, a, x2):
        return _einsum("...i,oij,...j->...o", x1, a, x2)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x1, a, x2 = saved
        n1, na, n2 = ctx.needs_input_grad
        return (_einsum("...o,oij,...j->...i", g, a, x2) if n1 else None,
                _einsum("...o,...i,...j->oij", g, x1, x2) if na else None,
                _einsum("...o,oij,...i->...j", g, a, x1) if n2 else None)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out):
        """Trilinear: the sum of the op applied with one tangent in place of its primal."""
        terms = [_einsum("...i,oij,...j->...o", *(t if j == i else p
                                                  for j, p in enumerate(primals)))
                 for i, t in enumerate(tangents) if t is not None]
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total
