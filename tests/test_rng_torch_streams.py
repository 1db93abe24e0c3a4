"""The CPU random streams are PyTorch's (Note [PyTorch's CPU streams] in
kernels/numpy/random.py): for a seed, ``rand``, ``randn``, ``randint``, ``randperm``,
``uniform_``, ``normal_``, ``random_``, ``bernoulli``, dropout, the default layer
initialisations and the data utilities' shuffles give PyTorch's numbers bit for bit.

The golden values below were printed by PyTorch 2.13 (CPU) for these seeds, so the streams are
checked where torch is not installed (CI); where it is, the last tests compare many seeds,
sizes and dtypes against torch itself."""

import itertools
import math

import numpy as np
import pytest

import tritongrad as tg


def _seeded(seed, fn):
    tg.manual_seed(seed)
    return fn()


_W = tg.tensor([[0.0, 0.1, 0.2, 0.3, 0.4], [0.5, 0.1, 0.1, 0.3, 0.0]])
GOLDEN = {  # name -> (seed, draw, PyTorch 2.13's values)
    "rand": (0, lambda: tg.rand(4),
             [0.49625658988952637, 0.7682217955589294, 0.08847743272781372,
              0.13203048706054688]),
    "rand_float64": (0, lambda: tg.rand(3, dtype=tg.float64),
                     [0.9700530018065531, 0.707819864399788, 0.45938294312745087]),
    # under 16 elements: Box-Muller in float64, one sample cached between calls
    "randn_scalar_path": (0, lambda: tg.randn(5),
                          [1.5409960746765137, -0.293428897857666, -2.1787893772125244,
                           0.5684312582015991, -1.0845223665237427]),
    # 16 or more: blocks of 16 (the float32 polynomials), the partial block redrawn
    "randn_blocks_tail": (0, lambda: tg.randn(20)[-3:],
                          [1.2590092420578003, 2.0049805641174316, 0.05373690277338028]),
    "randn_float64": (5, lambda: tg.randn(18, dtype=tg.float64)[:2],
                      [0.8235713931461853, -0.7421276044281208]),
    "normal_": (5, lambda: tg.empty(18).normal_(0.0, 0.02)[:3],
                [0.036846596747636795, 0.010377743281424046, -0.006728986743837595]),
    "randint": (42, lambda: tg.cat([tg.randint(0, 10, (8,)), tg.randint(0, 2 ** 40, (2,))]),
                [2, 7, 6, 4, 6, 5, 0, 4, 440001501305, 902372521174]),
    "randperm": (42, lambda: tg.randperm(10), [2, 6, 1, 8, 4, 5, 0, 9, 3, 7]),
    "linear_init": (1, lambda: tg.nn.Linear(3, 2).weight.detach().reshape(-1),
                    [0.2974873483181, -0.2548298239707947, -0.11192598193883896,
                     0.2709902822971344, -0.5435388088226318, 0.3462469279766083]),
    "dropout": (3, lambda: tg.nn.functional.dropout(tg.ones(12), 0.5),
                [2.0, 2.0, 0.0, 2.0, 0.0, 0.0, 2.0, 2.0, 2.0, 0.0, 2.0, 0.0]),
    "exponential_": (2, lambda: tg.empty(3, dtype=tg.float64).exponential_(2.5),
                     [0.9982770389232976, 0.04077553381083465, 0.49343092572058683]),
    # one sample and no replacement: the exponential race; with replacement: the binary
    # search in the cumulative sums (one call after the other, from one seed)
    "multinomial": (4, lambda: tg.cat([tg.multinomial(_W, 1), tg.multinomial(_W, 3),
                                       tg.multinomial(_W, 6, replacement=True)], 1).reshape(-1),
                    [2, 3, 4, 2, 2, 3, 3, 2, 4, 3, 3, 0, 3, 1, 0, 0, 3, 0, 0, 0]),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_streams_give_pytorchs_numbers(name):
    seed, draw, want = GOLDEN[name]
    got = _seeded(seed, draw)
    np.testing.assert_array_equal(got.numpy().astype(np.float64 if got.dtype.is_floating_point
                                                     else np.int64),
                                  np.array(want, dtype=np.float64 if got.dtype.is_floating_point
                                           else np.int64))


# The samplers: the values, then the next ``rand(2)`` (the stream left where PyTorch leaves
# it). Printed by PyTorch 2.13 (CPU) for ``torch.manual_seed(seed)``, the same call, then
# ``torch.rand(2)``.
GOLDEN_SAMPLERS = {  # name -> (seed, draw, values, the next rand(2))
    "cauchy_": (3, lambda: tg.empty(4).cauchy_(0.5, 2.0),
                [-18.093225479125977, -1.084428071975708, 2.8108747005462646,
                 -2.76538348197937], [0.5944212079048157, 0.887856662273407]),
    "geometric_": (3, lambda: tg.empty(5, dtype=tg.float64).geometric_(0.2),
                   [16.0, 6.0, 2.0, 8.0, 2.0], [0.45103132724761963, 0.7994906306266785]),
    # (the scalar Box-Muller whatever the size, its z std + mean fused)
    "log_normal_": (3, lambda: tg.empty(18, dtype=tg.float64).log_normal_(0.1, 0.5)[-3:],
                    [1.0619138931071295, 1.7562931315843568, 1.661695984898907],
                    [0.3686259388923645, 0.004324436187744141]),
    "poisson": (6, lambda: tg.poisson(tg.tensor([0.0, 0.5, 4.0, 12.0, 250.0])),
                [0.0, 0.0, 5.0, 18.0, 224.0], [0.1878029704093933, 0.837465226650238]),
    "binomial": (6, lambda: tg.binomial(
        tg.tensor([0.0, 7.0, 30.0, 100.0, 1000.0], dtype=tg.float64),
        tg.tensor([0.5, 0.3, 0.9, 0.2, 0.6], dtype=tg.float64)),
        [0.0, 4.0, 28.0, 18.0, 569.0], [0.21090328693389893, 0.4281542897224426]),
    "Gamma": (8, lambda: tg.distributions.Gamma(
        tg.tensor([0.3, 1.0, 7.5], dtype=tg.float64),
        tg.tensor(2.0, dtype=tg.float64)).sample((2,)).reshape(-1),
        [0.0018248956433747513, 0.25491729836027754, 2.66005802643728, 0.1864074671074506,
         0.03057813772897684, 5.86022708972779], [0.6386169195175171, 0.4480188488960266]),
    # (float32 concentrations: PyTorch draws the gammas in float64 for the Dirichlet)
    "Dirichlet": (8, lambda: tg.distributions.Dirichlet(
        tg.tensor([0.5, 2.0, 4.0])).sample((2,)).reshape(-1),
        [0.009231816977262497, 0.3671012222766876, 0.6236669421195984, 0.10570095479488373,
         0.05448531731963158, 0.8398137092590332], [0.6386169195175171, 0.4480188488960266]),
    # (a narrow tail: the uniform-candidate rejection branch)
    "trunc_normal_": (2, lambda: tg.nn.init.trunc_normal_(tg.empty(4), 0.0, 1.0, 1.5, 4.0),
                      [3.2789933681488037, 1.5917503833770752, 2.689995288848877,
                       2.0500664710998535], [0.552952766418457, 0.5381805896759033]),
    # (a float64 uniform per non-positive input only, between bounds rounded to float)
    "rrelu": (4, lambda: tg.nn.functional.rrelu(tg.tensor([-1.0, 2.0, -0.5, 0.0, -3.0, 1.5]),
                                                0.1, 0.4, training=True),
              [-0.2431328147649765, 2.0, -0.15974821150302887, 0.0, -1.148841381072998, 1.5],
              [0.6185790300369263, 0.9743886590003967]),
    "rrelu float64": (4, lambda: tg.nn.functional.rrelu(
        tg.tensor([-1.0, 2.0, -0.5, 0.0, -3.0, 1.5], dtype=tg.float64), training=True),
        [-0.2243977885068908, 2.0, -0.13871403399583324, 0.0, -0.9644731310116046, 1.5],
        [0.6185790300369263, 0.9743886590003967]),
    "sparse_": (2, lambda: tg.nn.init.sparse_(tg.empty(3, 2), 0.5, 1.0).reshape(-1),
                [0.0, 0.0, -0.31950026750564575, -1.2050371170043945, 0.0, 0.0],
                [0.7115973830223083, 0.20503419637680054]),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_SAMPLERS))
def test_samplers_give_pytorchs_numbers_and_leave_its_stream(name):
    seed, draw, want, after = GOLDEN_SAMPLERS[name]
    got = _seeded(seed, draw)
    np.testing.assert_array_equal(got.numpy().astype(np.float64), np.array(want))
    np.testing.assert_array_equal(tg.rand(2).numpy().astype(np.float64), np.array(after))


def test_shuffling_loader_gives_pytorchs_order():
    tg.manual_seed(9)
    ds = tg.utils.data.TensorDataset(tg.arange(10))
    order = [b[0].tolist() for b in tg.utils.data.DataLoader(ds, batch_size=4, shuffle=True)]
    assert order == [[9, 5, 4, 7], [3, 1, 0, 8], [2, 6]]


def test_state_is_pytorchs_layout_and_round_trips():
    tg.manual_seed(11)
    tg.randn(3)  # (leaves a cached normal in the state)
    state = tg.get_rng_state()
    assert state.dtype is tg.uint8 and tuple(state.shape) == (5056,)
    raw = state.numpy().tobytes()
    assert int.from_bytes(raw[:8], "little") == 11  # the initial seed comes first
    a = tg.randn(7)
    tg.set_rng_state(state)
    np.testing.assert_array_equal(tg.randn(7).numpy(), a.numpy())
    g = tg.Generator().manual_seed(4)
    s = g.get_state()
    x = tg.rand(5, generator=g)
    np.testing.assert_array_equal(tg.rand(5, generator=g.set_state(s)).numpy(), x.numpy())


def test_half_precision_uniform_never_reaches_the_upper_bound():
    tg.manual_seed(0)
    for dt in (tg.float16, tg.bfloat16):
        x = tg.empty(20000, dtype=dt).uniform_(-0.3, 0.7).to(tg.float32).numpy()
        top = tg.tensor([0.7], dtype=dt).to(tg.float32).item()
        assert x.min() >= tg.tensor([-0.3], dtype=dt).to(tg.float32).item() and x.max() < top


# -- against PyTorch itself, where it is installed (not in CI) --------------------------------

def _pair(torch, seed, fn_t, fn_g):
    torch.manual_seed(seed)
    a = fn_t()
    tg.manual_seed(seed)
    b = fn_g()
    a = (a.float() if a.dtype in (torch.float16, torch.bfloat16) else a).numpy()
    b = (b.to(tg.float32) if b.dtype in (tg.float16, tg.bfloat16) else b).numpy()
    return a, b


@pytest.mark.parametrize("seed", [0, 1, 2 ** 31 - 1, 2 ** 32 + 3])
def test_against_torch(seed):
    torch = pytest.importorskip("torch", minversion="2.13")
    for n, dn in itertools.product([1, 3, 15, 16, 17, 33, 1000],
                                   ["float32", "float64", "float16", "bfloat16"]):
        dt, dg = getattr(torch, dn), getattr(tg, dn)
        cases = [(lambda: torch.rand(n, dtype=dt), lambda: tg.rand(n, dtype=dg)),
                 (lambda: torch.empty(n, dtype=dt).uniform_(-1 / math.sqrt(7), 2.5),
                  lambda: tg.empty(n, dtype=dg).uniform_(-1 / math.sqrt(7), 2.5))]
        if dn in ("float32", "float64"):
            cases += [(lambda: torch.randn(n, dtype=dt), lambda: tg.randn(n, dtype=dg)),
                      (lambda: torch.empty(n, dtype=dt).normal_(0.5, 0.02),
                       lambda: tg.empty(n, dtype=dg).normal_(0.5, 0.02)),
                      (lambda: torch.bernoulli(torch.full((n,), 0.3, dtype=dt)),
                       lambda: tg.bernoulli(tg.full((n,), 0.3, dtype=dg))),
                      (lambda: torch.nn.functional.dropout(torch.ones(n, dtype=dt), 0.4),
                       lambda: tg.nn.functional.dropout(tg.ones(n, dtype=dg), 0.4))]
        for fn_t, fn_g in cases:
            a, b = _pair(torch, seed, fn_t, fn_g)
            np.testing.assert_array_equal(a, b, err_msg=f"n={n} {dn}")
    for lo, hi in ((0, 10), (-5, 3), (0, 2 ** 28), (0, 2 ** 40)):
        a, b = _pair(torch, seed, lambda: torch.randint(lo, hi, (50,)),
                     lambda: tg.randint(lo, hi, (50,)))
        np.testing.assert_array_equal(a, b)
    for dn in ("int64", "int32", "uint8", "bool", "float32", "float64"):
        a, b = _pair(torch, seed, lambda: torch.empty(40, dtype=getattr(torch, dn)).random_(),
                     lambda: tg.empty(40, dtype=getattr(tg, dn)).random_())
        np.testing.assert_array_equal(a, b)
    a, b = _pair(torch, seed, lambda: torch.randperm(100), lambda: tg.randperm(100))
    np.testing.assert_array_equal(a, b)
    w = np.random.default_rng(seed % 2 ** 32).random((3, 40)) ** 3
    for dn, (repl, n) in itertools.product(["float32", "float64"],
                                           [(False, 1), (False, 5), (True, 1), (True, 9)]):
        a, b = _pair(torch, seed,
                     lambda: torch.multinomial(torch.tensor(w, dtype=getattr(torch, dn)), n, repl),
                     lambda: tg.multinomial(tg.tensor(w, dtype=getattr(tg, dn)), n, repl))
        np.testing.assert_array_equal(a, b)
        a, b = _pair(torch, seed,
                     lambda: torch.empty(50, dtype=getattr(torch, dn)).exponential_(3.0),
                     lambda: tg.empty(50, dtype=getattr(tg, dn)).exponential_(3.0))
        np.testing.assert_array_equal(a, b)
    def weights(T):  # the default initialisations of a few layers, in order
        net = T.nn.Sequential(T.nn.Conv2d(3, 8, 3), T.nn.Linear(8, 4), T.nn.Embedding(9, 4),
                              T.nn.LSTM(4, 5))
        return T.cat([p.detach().reshape(-1) for p in net.parameters()])

    a, b = _pair(torch, seed, lambda: weights(torch), lambda: weights(tg))
    np.testing.assert_array_equal(a, b)


def test_data_utilities_against_torch():
    torch = pytest.importorskip("torch", minversion="2.13")

    def run(T, seed):
        T.manual_seed(seed)
        ds = T.utils.data.TensorDataset(T.arange(23))
        dl = T.utils.data.DataLoader(ds, batch_size=5, shuffle=True)
        out = [[b[0].tolist() for b in dl] for _ in range(2)]
        out.append([int(i) for i in T.utils.data.RandomSampler(ds, replacement=True,
                                                                num_samples=40)])
        out.append(list(T.utils.data.random_split(ds, [0.6, 0.4])[0].indices))
        g = T.Generator().manual_seed(3)
        out.append([b[0].tolist() for b in T.utils.data.DataLoader(ds, batch_size=4,
                                                                   shuffle=True, generator=g)])
        s = T.utils.data.distributed.DistributedSampler(ds, num_replicas=2, rank=1, seed=5)
        s.set_epoch(3)
        out.append(list(s))
        out.append(T.rand(3).tolist())  # the global stream in step afterwards
        return out

    for seed in (0, 7):
        assert run(torch, seed) == run(tg, seed)
    torch.manual_seed(2)
    torch.randn(3)
    tg.set_rng_state(tg.tensor(torch.get_rng_state().numpy()))  # PyTorch's state bytes
    np.testing.assert_array_equal(tg.randn(20).numpy(), torch.randn(20).numpy())


def test_samplers_against_torch():
    """The samplers over many seeds, sizes and parameters, each followed by ``rand(3)`` (the
    stream left where PyTorch leaves it): 2 x 6 x 17 comparisons."""
    torch = pytest.importorskip("torch", minversion="2.13")
    rates = np.concatenate([np.linspace(0, 12, 40), [9.99, 10.0, 35.5, 1e4]])
    counts = np.round(np.linspace(0, 300, 60))
    probs = np.random.default_rng(1).random(60)
    alphas = np.concatenate([np.linspace(0.01, 12, 57), [1.0, 1 / 3, 250.0]])

    def cases(T, dn):
        dt = getattr(T, dn)
        t = lambda v: T.tensor(v, dtype=dt)  # noqa: E731
        return [lambda: T.empty(60, dtype=dt).cauchy_(-0.5, 3.0),
                lambda: T.empty(60, dtype=dt).log_normal_(0.3, 0.7),
                lambda: T.empty(7, dtype=dt).log_normal_(),
                lambda: T.empty(60, dtype=dt).geometric_(0.05),
                lambda: T.empty(9, dtype=T.int64).geometric_(0.5),
                lambda: T.poisson(t(rates)),
                lambda: T.binomial(t(counts), t(probs)),
                lambda: T.binomial(t(counts), 1 - t(probs)),
                lambda: T.distributions.Gamma(t(alphas), t(1.5)).sample(),
                lambda: T.distributions.Beta(t(alphas[:20]), t(alphas[20:40])).sample(),
                # (rows of 3: longer rows' sums take ATen's reduction order, not matched)
                lambda: T.distributions.Dirichlet(t(alphas).reshape(20, 3)).sample(),
                lambda: T.distributions.Poisson(t(rates)).sample((2,)),
                lambda: T.nn.init.trunc_normal_(T.empty(50, dtype=dt)),
                lambda: T.nn.init.trunc_normal_(T.empty(50, dtype=dt), 0.2, 1.0, 1.9, 5.0),
                lambda: T.nn.init.trunc_normal_(T.empty(50, dtype=dt), 0.0, 0.1, -0.1, 0.1),
                lambda: T.nn.init.sparse_(T.empty(9, 4, dtype=dt), 0.3),
                lambda: T.nn.init.kaiming_normal_(T.empty(6, 7, dtype=dt))]

    for dn, seed in itertools.product(["float32", "float64"], [0, 1, 5, 17, 2 ** 31 - 1, 99]):
        if dn == "float32":  # (Gamma's float32 path: see tests/kernels/test_random.py)
            skip = {8}
        else:
            skip = set()
        for i, (fn_t, fn_g) in enumerate(zip(cases(torch, dn), cases(tg, dn))):
            if i in skip:
                continue
            a, b = _pair(torch, seed, lambda: torch.cat([fn_t().reshape(-1).double(),
                                                         torch.rand(3).double()]),
                         lambda: tg.cat([fn_g().reshape(-1).to(tg.float64),
                                         tg.rand(3).to(tg.float64)]))
            np.testing.assert_array_equal(a, b, err_msg=f"case {i} {dn} seed {seed}")


@pytest.mark.parametrize("fill, args", [("uniform_", (-1.0, 2.0)), ("normal_", (0.5, 3.0))])
def test_complex_fills_draw_both_parts(fill, args):
    # PyTorch fills view_as_real(z): real and imaginary parts alike (normal: std / sqrt(2)
    # each, so that the complex variance is std^2), in the order of the real view
    tg.manual_seed(3)
    z = getattr(tg.zeros(4000, dtype=tg.complex128), fill)(*args)
    tg.manual_seed(3)
    lo, hi = args
    r = getattr(tg.zeros(4000, 2, dtype=tg.float64), fill)(
        *((lo, hi) if fill == "uniform_" else (lo, hi / np.sqrt(2))))
    np.testing.assert_array_equal(z.numpy().view(np.float64).reshape(-1, 2), r.numpy())
    im = z.imag.numpy()
    if fill == "uniform_":
        assert im.min() >= lo and im.max() < hi and im.std() > 0.5
    else:
        assert abs((np.abs(z.numpy() - 0.5 * (1 + 1j)) ** 2).mean() - 9.0) < 0.6
    torch = pytest.importorskip("torch", minversion="2.13")
    torch.manual_seed(3)
    ref = getattr(torch.zeros(4000, dtype=torch.complex128), fill)(*args)
    np.testing.assert_array_equal(z.numpy(), ref.numpy())


@pytest.mark.parametrize("fill, err, message", [
    ("uniform_", NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    ("normal_", NotImplementedError, "\"normal_kernel_cpu\" not implemented for 'Long'"),
    ("log_normal_", NotImplementedError, "\"log_normal_cpu\" not implemented for 'Long'"),
    ("exponential_", RuntimeError, "dtype must be a floating point but you specified Long"),
    ("cauchy_", RuntimeError, "dtype must be a floating point but you specified long int"),
])
def test_continuous_fills_refuse_integers(fill, err, message):
    with pytest.raises(err, match=message):
        getattr(tg.zeros(3, dtype=tg.int64), fill)()
    with pytest.raises(NotImplementedError, match="\"geometric_cpu\" not implemented for 'Bool'"):
        tg.zeros(3, dtype=tg.bool).geometric_(0.5)
