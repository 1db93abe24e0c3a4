"""L-BFGS (optim/lbfgs.py): the first step by hand, exact minimisation of a convex quadratic,
convergence on the Rosenbrock function with and without the strong-Wolfe line search, the
history bound, the stopping rules and argument checks."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn, optim

rng = np.random.default_rng(23)


def rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def make_closure(opt, loss_fn, *params):
    def closure():
        opt.zero_grad()
        loss = loss_fn(*params)
        loss.backward()
        return loss
    return closure


def test_first_iteration_by_hand():
    # one iteration, no line search: t = min(1, 1 / |g|_1) * lr, p = p - t g
    w = nn.Parameter(tg.tensor([3.0, -4.0], dtype=tg.float64))
    opt = optim.LBFGS([w], lr=0.5, max_iter=1)
    loss = opt.step(make_closure(opt, lambda w: (w * w).sum(), w))
    assert loss.item() == 25.0
    g = np.array([6.0, -8.0])
    t = min(1.0, 1.0 / np.abs(g).sum()) * 0.5
    np.testing.assert_allclose(w.detach().numpy(), [3.0, -4.0] - t * g, rtol=1e-15)
    state = opt.state[w]
    assert state["n_iter"] == 1 and state["func_evals"] == 1 and state["t"] == t


def test_minimises_a_convex_quadratic_exactly():
    a = rng.standard_normal((6, 6))
    h = tg.tensor(a @ a.T + 6 * np.eye(6))
    b = tg.tensor(rng.standard_normal(6))
    w = nn.Parameter(tg.zeros(6, dtype=tg.float64))
    opt = optim.LBFGS([w], line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                      tolerance_change=1e-15)
    opt.step(make_closure(opt, lambda w: 0.5 * w @ h @ w - b @ w, w))
    # (to the precision the stopping rules allow: the directional derivative reaches
    # -tolerance_change with a gradient of about 1e-8)
    np.testing.assert_allclose(w.detach().numpy(), np.linalg.solve(h.numpy(), b.numpy()),
                               atol=1e-7)
    assert opt.state[w]["n_iter"] <= 20


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_rosenbrock(line_search):
    w = nn.Parameter(tg.tensor([-1.2, 1.0], dtype=tg.float64))  # the classic start
    opt = optim.LBFGS([w], lr=1 if line_search else 0.05, line_search_fn=line_search,
                      history_size=10)
    closure = make_closure(opt, rosenbrock, w)
    first = closure().item()
    for _ in range(40 if line_search else 200):
        opt.step(closure)
    assert rosenbrock(w).item() < 1e-8 * first
    np.testing.assert_allclose(w.detach().numpy(), np.ones(2), atol=1e-4)
    assert len(opt.state[w]["old_dirs"]) <= 10


def test_stops_at_a_stationary_point_and_checks_arguments():
    w = nn.Parameter(tg.zeros(3, dtype=tg.float64))
    opt = optim.LBFGS([w])
    opt.step(make_closure(opt, lambda w: (w * w).sum(), w))  # gradient 0: one evaluation
    assert opt.state[w]["func_evals"] == 1 and opt.state[w]["n_iter"] == 0
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [nn.Parameter(tg.ones(1))]}])
    # an unknown line search is accepted, as PyTorch accepts it, and refused at the first step
    # that would search (PyTorch's check sits in step)
    bad = optim.LBFGS([w], line_search_fn="backtracking")
    assert bad.param_groups[0]["line_search_fn"] == "backtracking"
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        bad.step(make_closure(bad, lambda w: ((w - 1) ** 2).sum(), w))
    model = nn.Linear(3, 1)  # a module's parameters, several tensors as one flat vector
    x, y = tg.randn(32, 3), tg.randn(32, 1)
    opt = optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
    closure = make_closure(opt, lambda: ((model(x) - y) ** 2).mean())
    before = closure().item()
    opt.step(closure)
    assert closure().item() < before
