"""PyTorch's CPU random streams, session 33's sweep (autograd/ops/random.py, sampling.py,
kernels/numpy/random.py): the expected numbers are PyTorch 2.13's for the same seed, written
out, so that the tests run without torch; a bitwise comparison with torch itself follows under
importorskip.

Covered: ``normal``'s float-std overloads (std and mean applied in the kernel, fused), float32
``binomial`` and fractional counts, ``random_``/``randint`` into float dtypes past 2^mantissa
(ATen's narrowed bounds) and their bounds errors and warnings, fills of non-contiguous tensors
(memory order; ``normal_`` one at a time), ``out=`` of ``bernoulli``/``multinomial``/
``randperm``, ``randperm``'s dtype limits and its 64-bit pass, Generator's ``clone_state``,
offsets, seeds and state errors, and the refusals of complex fills."""

import re
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.kernels.numpy import random as cpu_random


def _seeded(seed, fn):
    tg.manual_seed(seed)
    return fn()


# -- normal: std and mean applied by the kernel (fused), as ATen's normal_ ------------------

def test_normal_float_std_is_fused_in_the_kernel():
    got = _seeded(0, lambda: tg.normal(1.5, 2.5, (5,), dtype=tg.float64)).tolist()
    assert got == [5.352490270610108, 0.7664277355976341, -3.9469734551863933,
                   2.9210781932016694, -1.2113058560600523]
    # the same draws unfused differ in the last bit at index 4: the test can fail
    tg.manual_seed(0)
    z = tg.randn(5, dtype=tg.float64)
    assert (z * 2.5 + 1.5).tolist()[4] != got[4]


def test_normal_tensor_mean_float_std():
    mean = tg.tensor([-0.4, 0.35, 1.1, 1.85, 2.6])
    got = _seeded(1, lambda: tg.normal(mean, 2.5))
    np.testing.assert_array_equal(got.numpy(), np.array(
        [1.2533804178237915, 1.0173102617263794, 1.2541931867599487, 3.4032933712005615,
         1.470234990119934], np.float32))


def test_normal_vectorized_float32_with_mean_and_std():
    got = _seeded(0, lambda: tg.normal(1.5, 2.5, (20,)))
    assert got.numpy()[:3].tolist() == [-1.3145995140075684, -1.380900502204895,
                                        0.8735535144805908]
    assert got.numpy()[-1] == np.float32(1.6343423128128052)


def test_normal_out_fills_out_in_its_layout():
    out = tg.zeros(4, 5).t()
    tg.normal(0.0, 1.0, (5, 4), out=out, generator=tg.Generator().manual_seed(3))
    g = tg.Generator().manual_seed(3)
    # (a non-contiguous tensor: one scalar Box-Muller normal at a time, in memory order)
    serial = [tg.randn(1, dtype=tg.float64, generator=g).item() for _ in range(20)]
    np.testing.assert_array_equal(out.t().numpy().ravel(), np.float32(serial))


# -- binomial -----------------------------------------------------------------------------

def test_binomial_float32_and_fractional_counts():
    n = tg.tensor([0., 1., 5., 20., 100., 1000., 37.])
    p = tg.tensor([0.5, 0.3, 0.7, 0.2, 0.6, 0.01, 1.0])
    assert _seeded(0, lambda: tg.binomial(n, p)).tolist() == [0., 1., 3., 4., 61., 9., 37.]
    got = _seeded(0, lambda: tg.binomial(tg.tensor([5.5, 20.7, 0.4]),
                                         tg.tensor([0.3, 0.6, 0.5])))
    np.testing.assert_array_equal(got.numpy(), np.float32([3.0, 12.700000762939453, 0.0]))
    with pytest.raises(NotImplementedError, match="\"binomial_cpu\" not implemented for 'Half'"):
        tg.binomial(tg.ones(2, dtype=tg.float16), tg.ones(2, dtype=tg.float16))


# -- integers into float dtypes -------------------------------------------------------------

@pytest.mark.parametrize("dtype, high, expected", [
    (tg.float32, 2 ** 25, [8325944.0, 29665988.0, 18261804.0]),
    (tg.float16, 5000, [3260.0, 1867.0, 4268.0]),
    (tg.bfloat16, 300, [148.0, 53.0, 69.0]),
])
def test_random_into_floats_past_the_mantissa(dtype, high, expected):
    with pytest.warns(UserWarning, match=r"^to - 1 is out of bounds \[-\(2\^"):
        got = _seeded(0, lambda: tg.empty(3, dtype=dtype).random_(0, high))
    assert got.float().tolist() == expected


def test_float_bounds_as_aten_narrows_them():
    # ATen's update_to: high - 1 rounds up to high, so high moves down by the spacing there
    assert cpu_random.float_bounds(0, 2 ** 25, tg.float32) == (0, 2 ** 25 - 2)
    assert cpu_random.float_bounds(0, 5000, tg.float16) == (0, 4996)
    assert cpu_random.float_bounds(0, 2 ** 60, tg.float64) == (0, 2 ** 60 - 128)
    assert cpu_random.float_bounds(3, 2 ** 24, tg.float32) == (3, 2 ** 24)  # (exact: kept)


def test_randint_into_float32_past_the_mantissa():
    got = _seeded(0, lambda: tg.randint(0, 2 ** 30, (3,), dtype=tg.float32))
    assert got.tolist() == [382722848.0, 784923008.0, 710291712.0]


def test_random_from_without_to_draws_by_the_range():
    # (a range of 10: 32-bit draws, though the dtype is 8 bytes)
    got = _seeded(0, lambda: tg.empty(3, dtype=tg.int64).random_(2 ** 63 - 10, None))
    assert got.tolist() == [9223372036854775802, 9223372036854775807, 9223372036854775801]


@pytest.mark.parametrize("dtype, low, high, message", [
    (tg.int8, 0, 300, "to - 1 is out of bounds for signed char"),
    (tg.int8, -300, 3, "from is out of bounds for signed char"),
    (tg.uint8, -1, 3, "from is out of bounds for unsigned char"),
    (tg.bool, 0, 3, "to - 1 is out of bounds for bool"),
    (tg.float16, 0, 100000, "to - 1 is out of bounds for c10::Half"),
    (tg.float16, -100000, 0, "from is out of bounds for c10::Half"),
])
def test_random_bounds_errors(dtype, low, high, message):
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        tg.empty(3, dtype=dtype).random_(low, high)


def test_random_within_the_mantissa_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.empty(3).random_(-2 ** 24, 2 ** 24 + 1)


# -- fills of non-contiguous tensors: memory order (TensorIterator's) -----------------------

@pytest.mark.parametrize("fill, draw", [
    (lambda x, g: x.uniform_(-1, 2, generator=g),
     lambda shape, g: tg.empty(*shape).uniform_(-1, 2, generator=g)),
    (lambda x, g: x.exponential_(1.5, generator=g),
     lambda shape, g: tg.empty(*shape).exponential_(1.5, generator=g)),
    (lambda x, g: x.random_(3, 9, generator=g),
     lambda shape, g: tg.empty(*shape).random_(3, 9, generator=g)),
    (lambda x, g: x.bernoulli_(0.3, generator=g),
     lambda shape, g: tg.empty(*shape).bernoulli_(0.3, generator=g)),
    (lambda x, g: x.geometric_(0.3, generator=g),
     lambda shape, g: tg.empty(*shape).geometric_(0.3, generator=g)),
])
def test_fills_follow_memory_order(fill, draw):
    x = tg.zeros(2, 3, 4).permute(2, 0, 1)  # memory order: dims 1, 2, 0
    fill(x, tg.Generator().manual_seed(5))
    expected = draw((2, 3, 4), tg.Generator().manual_seed(5)).permute(2, 0, 1)
    np.testing.assert_array_equal(x.numpy(), expected.numpy())


def test_normal_of_a_non_contiguous_tensor_draws_one_at_a_time():
    x = tg.zeros(6, 8, dtype=tg.float64)[:, ::2]  # 24 elements, not contiguous
    x.normal_(0.5, 2.0, generator=tg.Generator().manual_seed(2))
    g = tg.Generator().manual_seed(2)
    serial = [tg.empty(1, dtype=tg.float64).normal_(0.5, 2.0, generator=g).item()
              for _ in range(24)]
    np.testing.assert_array_equal(x.numpy().ravel(), serial)
    # (the contiguous fill of 24 takes the blocks of 16: other numbers)
    block = tg.empty(24, dtype=tg.float64).normal_(0.5, 2.0,
                                                   generator=tg.Generator().manual_seed(2))
    assert not np.array_equal(block.numpy(), serial)


def test_bernoulli_tensor_p_into_a_transposed_tensor():
    p = tg.tensor(np.linspace(0, 1, 20).reshape(5, 4), dtype=tg.float32)
    x = tg.zeros(4, 5).t().bernoulli_(p, generator=tg.Generator().manual_seed(4))
    expected = tg.zeros(4, 5).bernoulli_(p.t(), generator=tg.Generator().manual_seed(4)).t()
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    # the out-of-place form fills a new contiguous tensor: row-major order
    y = tg.bernoulli(p.t().contiguous().t(), generator=tg.Generator().manual_seed(4))
    z = tg.bernoulli(p, generator=tg.Generator().manual_seed(4))
    np.testing.assert_array_equal(y.numpy(), z.numpy())


def test_randint_like_keeps_the_layout_and_its_order():
    x = tg.zeros(4, 5, dtype=tg.int64).t()
    got = tg.randint_like(x, 9, generator=tg.Generator().manual_seed(1))
    assert got.stride() == x.stride()
    expected = tg.randint(0, 9, (4, 5), generator=tg.Generator().manual_seed(1)).t()
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


# -- out= -----------------------------------------------------------------------------------

def test_out_of_bernoulli_multinomial_randperm():
    out = tg.empty(5, dtype=tg.int64)
    r = _seeded(0, lambda: tg.bernoulli(tg.full((5,), 0.5), out=out))
    assert r is out and out.tolist() == [1, 0, 1, 1, 1]
    out = tg.empty(2, dtype=tg.int64)
    w = tg.tensor([0.1, 0.5, 0.0, 2.0, 1.0, 0.3])
    assert _seeded(0, lambda: tg.multinomial(w, 2, out=out)) is out
    assert out.tolist() == [4, 3]
    out = tg.empty(7, dtype=tg.int64)
    assert _seeded(0, lambda: tg.randperm(7, out=out)) is out
    assert out.tolist() == [4, 0, 5, 3, 2, 6, 1]
    with pytest.raises(RuntimeError, match="^multinomial expects Long tensor out, got: Float$"):
        tg.multinomial(w, 2, out=tg.empty(2))
    with pytest.raises(TypeError, match=r"^bernoulli\(\) received an invalid combination"):
        tg.bernoulli(tg.full((5,), 0.5), 0.3, out=tg.empty(5))


# -- randperm -------------------------------------------------------------------------------

def test_randperm_dtype_limits():
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int8_t without "
                                           "overflow$"):
        tg.randperm(129, dtype=tg.int8)
    assert sorted(tg.randperm(128, dtype=tg.int8).tolist()) == list(range(128))
    with pytest.raises(RuntimeError, match="^value cannot be converted to type uint8_t"):
        tg.randperm(300, dtype=tg.uint8)
    with pytest.raises(RuntimeError, match=r"^n cannot be greater than 2049 for Half type\.$"):
        tg.randperm(2050, dtype=tg.float16)
    with pytest.raises(RuntimeError, match=r"^n cannot be greater than 2\^24\+1 for Float"):
        tg.randperm(2 ** 24 + 2, dtype=tg.float32)
    with pytest.raises(NotImplementedError, match="\"randperm\" not implemented for "
                                                  "'ComplexFloat'"):
        tg.randperm(3, dtype=tg.complex64)


def test_randperm_wide_pass_is_atens_inside_out_shuffle():
    # ATen's pass from n = 2^32 / 20 on: r[i] = i, then swapped with r[z], z = draw64 % (i+1);
    # checked on a small n against that loop written out over the same 64-bit draws
    n = 3000
    got = cpu_random._randperm_wide(n, cpu_random.CPUStream(9))
    words = cpu_random.CPUStream(9).bit_generator.random_raw(2 * n)
    r = [0] * n
    for i in range(n):
        z = ((int(words[2 * i]) << 32) | int(words[2 * i + 1])) % (i + 1)
        r[i] = r[z]
        r[z] = i
    assert got.tolist() == r


# -- Generator ------------------------------------------------------------------------------

def test_clone_state_is_an_independent_copy():
    g = tg.Generator().manual_seed(11)
    tg.randn(1, generator=g)  # (leaves a cached normal, which the clone keeps)
    c = g.clone_state()
    assert c is not g and c.initial_seed() == 11
    a = tg.randn(3, generator=g)
    np.testing.assert_array_equal(tg.randn(3, generator=c).numpy(), a.numpy())
    assert tg.Generator().clone_state().initial_seed() == 67280421310721


def test_generator_offsets_and_graphsafe_states_on_the_cpu():
    g = tg.Generator()
    for call in (g.get_offset, lambda: g.set_offset(3)):
        with pytest.raises(RuntimeError, match="^CPU Generator does not use offset$"):
            call()
    with pytest.raises(NotImplementedError, match="^graphsafe_get_state is not supported"):
        g.graphsafe_get_state()
    with pytest.raises(NotImplementedError, match="^graphsafe_set_state is not supported"):
        g.graphsafe_set_state(tg.Generator())


def test_manual_seed_arguments():
    assert tg.Generator().manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert tg.Generator().manual_seed(-2 ** 63).initial_seed() == 2 ** 63
    assert tg.Generator().manual_seed(2 ** 64 - 1).initial_seed() == 2 ** 64 - 1
    assert tg.Generator().manual_seed(np.int64(7)).initial_seed() == 7
    for bad in (2 ** 64, -2 ** 63 - 1):
        with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
            tg.Generator().manual_seed(bad)
    for bad, name in ((1.5, "float"), (True, "bool"), ("a", "str")):
        with pytest.raises(RuntimeError, match=f"^manual_seed expected a long, but got {name}$"):
            tg.Generator().manual_seed(bad)


def test_set_state_errors():
    with pytest.raises(TypeError, match="^expected a torch.ByteTensor, but got list$"):
        tg.Generator().set_state([1, 2])
    with pytest.raises(TypeError, match="^RNG state must be a torch.ByteTensor"):
        tg.Generator().set_state(tg.zeros(5056))
    with pytest.raises(RuntimeError, match="^Expected a CPUGeneratorImplState of size 5056 but "
                                           "found the input RNG state size to be 10$"):
        tg.set_rng_state(tg.zeros(10, dtype=tg.uint8))


# -- refusals of complex fills --------------------------------------------------------------

@pytest.mark.parametrize("fill, error, message", [
    (lambda x: x.exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a "
     "floating point but you specified ComplexFloat"),
    (lambda x: x.cauchy_(), RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a floating "
     "point but you specified c10::complex<float>"),
    (lambda x: x.log_normal_(), NotImplementedError,
     "\"log_normal_cpu\" not implemented for 'ComplexFloat'"),
    (lambda x: x.geometric_(0.5), NotImplementedError,
     "\"geometric_cpu\" not implemented for 'ComplexFloat'"),
    (lambda x: x.bernoulli_(0.5), NotImplementedError,
     "\"bernoulli_scalar_cpu_\" not implemented for 'ComplexFloat'"),
    (lambda x: tg.bernoulli(x), NotImplementedError,
     "\"bernoulli_tensor_cpu_self_\" not implemented for 'ComplexFloat'"),
])
def test_complex_fills_are_refused(fill, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fill(tg.zeros(3, dtype=tg.complex64))


def test_bernoulli_of_integer_probabilities():
    with pytest.raises(NotImplementedError, match="\"bernoulli_tensor_cpu_p_\" not implemented "
                                                  "for 'Long'"):
        tg.bernoulli(tg.zeros(3, dtype=tg.int64))


# -- bitwise against torch -------------------------------------------------------------------

def _cases(L):
    T = lambda *s, dt="float32": L.zeros(*s, dtype=getattr(L, dt))  # noqa: E731
    return {
        "normal_ff_f64": lambda: L.normal(0.3, 1.7, (7,), dtype=L.float64),
        "normal_ff_f16": lambda: L.normal(0.3, 1.7, (20,), dtype=L.float16),
        "normal_Tf_bf16": lambda: L.normal(T(20, dt="bfloat16") + 1, 2.5),
        "normal_transposed_f32": lambda: T(4, 5).t().normal_(0.5, 2.0),
        "uniform_transposed_f16": lambda: T(4, 5, dt="float16").t().uniform_(-1, 1),
        "log_normal_permuted": lambda: T(2, 3, 4).permute(2, 0, 1).log_normal_(),
        "cauchy_sliced": lambda: T(6, 8, dt="float64")[:, 1::2].cauchy_(),
        "random_f32_2_25": lambda: T(6).random_(-2 ** 25 - 3, 2 ** 25),
        "randint_bf16": lambda: L.randint(0, 2 ** 29, (6,), dtype=L.bfloat16),
        "binomial_f32": lambda: L.binomial(L.full((30,), 300.0),
                                           L.tensor(np.linspace(0.01, 0.99, 30),
                                                    dtype=L.float32)),
        "sequence": lambda: [L.randn(3), L.normal(1.0, 2.0, (5,)), L.empty(17).normal_(),
                             L.rand(2, dtype=L.float64)],
    }


@pytest.mark.parametrize("name", sorted(_cases(tg)))
@pytest.mark.parametrize("seed", [0, 7])
def test_bitwise_against_torch(name, seed):
    torch = pytest.importorskip("torch", minversion="2.13")

    def run(L):
        L.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _cases(L)[name]()
        outs = out if isinstance(out, list) else [out]
        return [o.float().numpy() if o.dtype == L.bfloat16 else o.numpy() for o in outs] + \
            [L.rand(2, dtype=L.float64).numpy()]  # (and the stream consumed alike)

    for a, b in zip(run(tg), run(torch)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


# -- factories built on the fills (autograd/ops/creation.py) ------------------------------------

def test_factories_draw_as_aten_fills():
    # rand_like/randn_like of a transposed input draw in its memory order; complex randn's
    # std 1/sqrt(2) is applied inside the normal kernel; manual_seed(1.5) seeds 1
    tg.manual_seed(3)
    x = tg.zeros(3, 4).t()
    a, b = tg.rand_like(x), tg.randn_like(x)
    tg.manual_seed(3)
    mem_a = tg.rand(4, 3)
    mem_b = tg.randn(4, 3)
    np.testing.assert_array_equal(a.t().contiguous().numpy().ravel(), mem_a.numpy().ravel())
    np.testing.assert_array_equal(b.t().contiguous().numpy().ravel(), mem_b.numpy().ravel())
    tg.manual_seed(1.5)
    first = tg.rand(2)
    tg.manual_seed(1)
    np.testing.assert_array_equal(first.numpy(), tg.rand(2).numpy())
    with pytest.raises(RuntimeError, match="^to - 1 is out of bounds for c10::Half"):
        tg.randint(0, 100000, (2,), dtype=tg.float16)
    torch = pytest.importorskip("torch", minversion="2.13")
    torch.manual_seed(7)
    tg.manual_seed(7)
    np.testing.assert_array_equal(tg.randn(5, dtype=tg.complex64).numpy(),
                                  torch.randn(5, dtype=torch.complex64).numpy())


def test_dropout_draws_as_atens_in_every_float_dtype():
    # ATen's _dropout_impl: Bernoulli(1 - p) noise in the input's dtype, divided by 1 - p in
    # place, one product (a float32 mask cast and two products differed in half precision)
    x = np.arange(1.0, 61.0).reshape(3, 4, 5) / 7
    for dt in ("float32", "float16", "bfloat16"):
        tg.manual_seed(0)
        t = tg.tensor(x, dtype=getattr(tg, dt))
        got = tg.nn.functional.dropout(t, 0.7)
        tg.manual_seed(0)
        noise = tg.empty_like(t).bernoulli_(0.3)
        np.testing.assert_array_equal(got.float().numpy(),
                                      (t * noise.div_(0.3)).float().numpy())
    assert tg.nn.functional.dropout(tg.ones(0, dtype=tg.int64), 0.5) is not None
    torch = pytest.importorskip("torch", minversion="2.13")
    for dt in ("float16", "bfloat16"):
        tg.manual_seed(1)
        torch.manual_seed(1)
        a = tg.nn.functional.dropout(tg.tensor(x, dtype=getattr(tg, dt)).transpose(0, 2), 0.7)
        b = torch.nn.functional.dropout(torch.tensor(x, dtype=getattr(torch, dt))
                                        .transpose(0, 2), 0.7)
        np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())
