"""The rest of ``torch.compiler`` (session 40), run where there is no compiler: each function
does what PyTorch's does outside compilation. Checked against values recorded from torch 2.13
and, where torch is installed, against a live run."""

import numpy as np
import pytest

import tritongrad as tg


class _Guard:
    def __init__(self, guard_type, is_global, value):
        self.guard_type, self.is_global, self.value = guard_type, is_global, value


def _scenario(torch) -> list:
    c = torch.compiler
    out = [c.is_exporting(), c.get_default_backend()]
    c.set_default_backend("eager")
    out.append(c.get_default_backend())
    c.set_default_backend(None)
    out += [c.get_default_backend(), c.set_enable_guard_collectives(False)]
    f = lambda x: x
    out += [c.allow_in_graph(f) is f, c.assume_constant_result(f) is f,
            c.nested_compile_region(f)(3), c.nested_compile_region()(f)(4)]

    def orig(x):
        return x + 1

    @c.substitute_in_graph(orig)
    def poly(x):
        return x + 2
    out += [poly(1), poly.__name__]

    @c.wrap_numpy
    def g(a, b):
        return {"s": a @ b + 1, "n": np.float64(2.0)}
    r = g(torch.ones(2, 2), torch.ones(2, 2))
    out += [type(r["s"]).__name__, r["s"].tolist(), str(r["s"].dtype).split(".")[1],
            type(r["n"]).__name__]
    try:
        g(torch.ones(2, 2, requires_grad=True), torch.ones(2, 2))
    except RuntimeError as e:
        out.append(str(e)[:60])
    out.append(c.cudagraph_mark_step_begin())
    with c.set_stance("force_eager"):
        out.append("inside")

    @c.set_stance("force_eager")
    def h():
        return 5
    out.append(h())
    try:
        c.set_stance("eager_on_recompile", force_backend="eager")
    except RuntimeError as e:
        out.append(str(e))
    out += [c.save_cache_artifacts()]
    entries = [_Guard("TENSOR_MATCH", False, torch.ones(1)),
               _Guard("TENSOR_MATCH", True, torch.nn.Parameter(torch.ones(1))),
               _Guard("GLOBAL_STATE", True, None), _Guard("ID_MATCH", False, None)]
    out += [c.keep_portable_guards_unsafe(entries), c.keep_tensor_guards_unsafe(entries),
            c.keep_tensor_guards_unsafe(entries, True), c.skip_guard_on_globals_unsafe(entries),
            c.skip_all_guards_unsafe(entries)]
    m = torch.compile(torch.nn.Linear(2, 2), backend="eager", name="m", recompile_limit=3)
    out.append(type(m).__name__)
    return out


RECORDED = [False, "inductor", "eager", "inductor", False, True, True, 3, 4, 2, "poly",
            "Tensor", [[3.0, 3.0], [3.0, 3.0]], "float32", "float64",
            "Can't call numpy() on Tensor that requires grad. Use tensor.", None, "inside", 5,
            "non-default stance cannot have force_backend set", None,
            [True, False, True, False], [True, False, False, False], [True, True, False, False],
            [True, False, False, True], [False, False, False, False], "OptimizedModule"]


def test_against_recorded_torch():
    assert _scenario(tg) == RECORDED


def test_against_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    assert _scenario(tg) == _scenario(torch)
    assert set(torch.compiler.__all__) - set(tg.compiler.__all__) == {"config"}


def test_default_backend_reaches_compile():
    import warnings
    tg.compiler.set_default_backend("eager")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no "running eagerly" notice for eager)
            assert tg.compile(lambda x: x * 2)(tg.ones(1)).item() == 2.0
    finally:
        tg.compiler.set_default_backend(None)
    with pytest.raises(NotImplementedError, match="load_compiled_function"):
        tg.compiler.load_compiled_function(None)
