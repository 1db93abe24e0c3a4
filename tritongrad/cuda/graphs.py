"""``make_graphed_callables``: a callable's forward and backward, each replayed as a CUDA graph.

The graphs themselves (``CUDAGraph``, ``graph``, ``graph_pool_handle``) are the runtime's
(runtime/graphs.py); this part needs autograd, which the runtime does not know, so it lives
with the public package.
"""

from __future__ import annotations

from collections.abc import Callable

from ..autograd import engine as _engine
from ..autograd.function import Function, once_differentiable
from ..autograd.tensor import Tensor
from ..runtime import streams as _streams
from ..runtime.graphs import CUDAGraph, graph, graph_pool_handle

__all__ = ["make_graphed_callables"]


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool=None):
    """Returns graphed versions of ``callables``: forward and backward replayed as CUDA graphs.

    Each callable (a function or an ``nn.Module``) is run ``num_warmup_iters`` times on a side
    stream with ``sample_args`` (forward and backward, so that every kernel is compiled and
    every lazy allocation made), then its forward is captured into one graph and its backward
    (the gradients of its outputs with respect to the tensor arguments that require grad and
    the module's parameters) into another, all in one memory pool. The graphed callable is an
    autograd Function whose forward copies its arguments into the captured inputs and replays
    the forward graph, and whose backward copies the incoming gradients into the captured ones
    and replays the backward graph. As ``torch.cuda.make_graphed_callables``; the same rules
    hold:

    - arguments must have the sample arguments' shapes, dtypes, devices and requires_grad,
      and be tensors (no keyword arguments);
    - the returned outputs are the graph's own output tensors, overwritten by the next call:
      use (or clone) them before calling again;
    - a module must not have hooks when it is graphed; its graphed forward is used while
      ``module.training`` is what it was at capture, the original forward otherwise;
    - several callables are captured in the order given and must be called in that order
      (their backwards in reverse order), as a network's layers would be.

    Args:
        callables: a callable or ``nn.Module``, or a tuple of them.
        sample_args: a tuple of tensors (the arguments of the one callable), or a tuple of
            such tuples, one per callable.
        num_warmup_iters: eager iterations run before capturing (3, as PyTorch's default).
        allow_unused_input: an argument that no output depends on gets a None gradient
            instead of an error.
        pool: a ``graph_pool_handle()`` to capture into (default: a new pool).

    Returns:
        The graphed callable(s), in the structure of ``callables``: a module is returned with
        its ``forward`` replaced.

    Example:
        >>> model = tg.nn.Linear(4, 2).cuda()  # doctest: +SKIP
        >>> graphed = tg.cuda.make_graphed_callables(model, (tg.randn(8, 4, device="cuda"),))
        >>> loss = graphed(x).square().sum(); loss.backward()  # both graphs replayed
    """
    from ..nn.module import Module

    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    if not (isinstance(sample_args, tuple) and len(sample_args) == len(callables)
            and all(isinstance(a, tuple) for a in sample_args)):
        raise TypeError("make_graphed_callables: sample_args must be a tuple of tensors for "
                        "one callable, or a tuple of such tuples, one per callable")
    for c, args in zip(callables, sample_args):
        if isinstance(c, Module):
            if c._forward_hooks or c._forward_pre_hooks or c._backward_hooks \
                    or c._backward_pre_hooks:
                raise RuntimeError("Modules must not have hooks registered at the time they are "
                                   "passed. However, registering hooks on modules after passing "
                                   "them through make_graphed_callables is allowed.")
            if any(not p.requires_grad for p in c.parameters()):
                raise RuntimeError("In any Module passed to make_graphed_callables, all "
                                   "parameters must require grad.")
        for a in args:
            if not isinstance(a, Tensor):
                raise TypeError(f"make_graphed_callables: sample arguments must be tensors, "
                                f"got {type(a).__name__}")
            if a.device.type != "cuda":
                raise ValueError(f"make_graphed_callables: sample arguments must be CUDA "
                                 f"tensors, got one on {a.device}")
    params = [tuple(c.parameters()) if isinstance(c, Module) else () for c in callables]
    surfaces = [tuple(args) + p for args, p in zip(sample_args, params)]

    def grads_of(outputs, surface):
        """The gradients of the outputs that require grad w.r.t. the surface's inputs that do;
        also returns the grad_outputs tensors it used, for the capture to keep."""
        outs = tuple(o for o in outputs if o.requires_grad)
        ins = tuple(i for i in surface if i.requires_grad)
        grad_outs = tuple(_empty_like(o) for o in outs)
        if not outs or not ins:
            return (), grad_outs
        grads = _engine.grad(outs, ins, grad_outs, allow_unused=allow_unused_input)
        return grads, grad_outs

    # Warm up on a side stream: compiles every kernel and makes every one-time allocation
    # (a capture may not do either), as PyTorch does.
    _streams.synchronize()
    warmup_stream = _streams.Stream()
    with _streams.stream(warmup_stream):
        for c, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(num_warmup_iters):
                outputs = _flatten(c(*args))
                grads_of(outputs, surface)
            del outputs
    _streams.synchronize()

    mempool = graph_pool_handle() if pool is None else pool
    fwd_graphs = [CUDAGraph() for _ in callables]
    bwd_graphs = [CUDAGraph() for _ in callables]
    static_outputs, structures = [], []
    for c, args, g in zip(callables, sample_args, fwd_graphs):
        with graph(g, pool=mempool):
            result = c(*args)
        outputs = _flatten(result)
        static_outputs.append(outputs)
        structures.append(type(result) if isinstance(result, (tuple, list)) else None)

    # Backwards in reverse order, as they will run (their pool reuse follows that order).
    static_grad_outputs: list = [None] * len(callables)
    static_grad_inputs: list = [None] * len(callables)
    for i in reversed(range(len(callables))):
        g, surface, outputs = bwd_graphs[i], surfaces[i], static_outputs[i]
        with graph(g, pool=mempool):
            grads, grad_outs = grads_of(outputs, surface)
        it_out = iter(grad_outs)
        static_grad_outputs[i] = tuple(next(it_out) if o.requires_grad else None
                                       for o in outputs)
        it_in = iter(grads)
        static_grad_inputs[i] = tuple(next(it_in) if s.requires_grad else None for s in surface)

    graphed = []
    for i, c in enumerate(callables):
        fn = _graphed_function(fwd_graphs[i], bwd_graphs[i], len(sample_args[i]), surfaces[i],
                               static_outputs[i], static_grad_outputs[i], static_grad_inputs[i])
        call = _functionalized(fn, params[i], structures[i], len(sample_args[i]))
        if isinstance(c, Module):
            call = _module_forward(c, call)
        graphed.append(call)
    return graphed[0] if just_one else tuple(graphed)


def _empty_like(t: Tensor) -> Tensor:
    from ..autograd.ops.creation import empty_like

    return empty_like(t)


def _flatten(result) -> tuple:
    if isinstance(result, Tensor):
        return (result,)
    if isinstance(result, (tuple, list)) and all(isinstance(o, Tensor) for o in result):
        return tuple(result)
    raise TypeError(f"make_graphed_callables: a callable must return a tensor or a tuple of "
                    f"tensors, got {type(result).__name__}")


def _graphed_function(fwd_graph: CUDAGraph, bwd_graph: CUDAGraph, n_args: int, surface: tuple,
                      static_outputs: tuple, static_grad_outputs: tuple,
                      static_grad_inputs: tuple) -> type[Function]:
    """The autograd Function that replays one callable's two graphs."""

    class Graphed(Function):
        @staticmethod
        def forward(ctx, *inputs):
            # Only the user's arguments can be new tensors; the parameters are the captured
            # ones themselves. An argument that is the captured input needs no copy.
            for static, new in zip(surface[:n_args], inputs[:n_args]):
                if static.data_ptr() != new.data_ptr():
                    static.copy_(new)
            fwd_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        @once_differentiable
        def backward(ctx, *grads):
            for static, new in zip(static_grad_outputs, grads):
                if static is not None and new is not None and static.data_ptr() != new.data_ptr():
                    static.copy_(new)
            bwd_graph.replay()
            return tuple(None if b is None else b.detach() for b in static_grad_inputs)

    return Graphed


def _functionalized(fn: type[Function], params: tuple, structure, n_args: int) -> Callable:
    def graphed(*args):
        if len(args) != n_args:
            raise TypeError(f"graphed callable: expected {n_args} tensor arguments (as the "
                            f"sample arguments), got {len(args)}")
        outputs = fn.apply(*args, *params)
        if structure is None:
            return outputs[0]
        return structure(outputs)

    return graphed


def _module_forward(module, call: Callable):
    """Gives ``module`` a forward that replays the graphs while its training mode is the one
    they were captured in, and runs the original forward otherwise."""
    captured_training = module.training
    original = module.forward

    def forward(*args):
        if module.training == captured_training:
            return call(*args)
        return original(*args)

    module.forward = forward
    return module
