"""Views and in-place writes as PyTorch allows them: creation meta (views made under no_grad,
inference mode, by multi-output ops), views that require grad through their base, views of
inference tensors, in-place view ops (``t_``, ``transpose_``, ``as_strided_``, ...),
``unsafe_split``, and the storage methods (``storage``, ``set_``, ``resize_``) with
``grad_dtype`` (Note [View + in-place], autograd/tensor.py; autograd/storage.py)."""

import numpy as np
import pytest
from tritongrad.autograd import forward_ad as fwAD

import tritongrad as tg

NO_GRAD = ("A view was created in no_grad mode and is being modified inplace with grad mode "
           "enabled. Given that this use case is ambiguous and error-prone, it is forbidden.")
INFERENCE = ("A view was created in inference mode and is being modified inplace in normal "
             "mode. Given that this use case is ambiguous and error-prone, it is forbidden.")
MULTI = ("This view is the output of a function that returns multiple views. Such functions "
         "do not allow the output views to be modified inplace.")


def _f64(values, requires_grad=False):
    return tg.tensor(values, dtype=tg.float64, requires_grad=requires_grad)


def _nonleaf(*shape):
    """A float64 non-leaf (arange values) and its leaf."""
    leaf = tg.arange(float(np.prod(shape)), dtype=tg.float64).reshape(shape).requires_grad_()
    return leaf.clone(), leaf


# -- creation meta ------------------------------------------------------------------------------

def test_a_view_made_under_no_grad_requires_grad_through_its_base_but_has_no_history():
    b, _ = _nonleaf(3)
    with tg.no_grad():
        v = b[:2]
    assert v.requires_grad and v.is_leaf and v.grad_fn is None and v._is_view()
    y = v * 2  # recorded (v requires grad), but no gradient reaches anything through v
    # (the second edge: the wrapped number's, Note [Edges of wrapped scalars])
    assert y.requires_grad and y.grad_fn.next_functions == ((None, 0), (None, 0))
    with pytest.raises(RuntimeError, match="^" + NO_GRAD):
        v.add_(1)
    with tg.no_grad():
        v.add_(1)  # both in no_grad: allowed


def test_a_view_made_in_inference_mode_keeps_its_base_and_version_counter():
    b, _ = _nonleaf(2, 3)
    with tg.inference_mode():
        v = b.view(-1)
        w = v.view(6)
        assert not tg.is_inference(v) and v.requires_grad and v._is_view() and w.is_leaf
        w.add_(1)  # inference mode: nothing recorded, the version still moves for both
        assert w._version == b._version == 1
    with pytest.raises(RuntimeError, match="^" + INFERENCE):
        v.add_(1)
    with pytest.raises(RuntimeError, match="^" + INFERENCE):
        v.transpose_(0, 0)


def test_a_stale_view_from_no_grad_or_inference_mode_refuses_to_regenerate_its_history():
    for mode, words in ((tg.no_grad, ("no_grad mode and its base or another view of its base "
                                       "has been modified inplace with grad mode enabled")),
                        (tg.inference_mode, ("inference mode and its base or another view of "
                                             "its base has been modified inplace in normal "
                                             "mode"))):
        b, _ = _nonleaf(3)
        with mode():
            v = b[1:]
        b.mul_(2)
        with pytest.raises(RuntimeError, match="^A view was created in " + words):
            _ = v.grad_fn


def test_a_stale_no_grad_view_prints_grad_fn_invalid():
    a = tg.ones(1, requires_grad=True)
    with tg.no_grad():
        b = a[:]
        b *= 2
    assert repr(b) == "tensor([2.], grad_fn=<Invalid>)"


def test_a_view_of_a_view_inherits_its_creation_meta():
    x = tg.zeros(2)
    with tg.no_grad():
        y = x.view(2)
    y.requires_grad_(True)
    z = y.view(2)  # recorded (ViewBackward0), but still "made under no_grad" through y
    with pytest.raises(RuntimeError, match=r"^Output 0 of View is a view of a view which was "
                                           r"created in no_grad mode and is being modified "
                                           r"inplace with grad mode enabled\. .* inside the "
                                           r"no_grad block"):
        z /= 2
    b, _ = _nonleaf(3, 2)
    c = b.unbind(0)[0].view(2)
    with pytest.raises(RuntimeError, match=r"^Output 0 of View is a view and is being modified "
                                           r"inplace\. " + MULTI):
        c.mul_(2)


def test_multi_output_views_refuse_writes_of_values_that_require_grad():
    a = tg.zeros(1, 2)
    b = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=MULTI):
        a.unbind()[0].copy_(b)  # a needs no grad, but what is written does
    a.unbind()[0].copy_(tg.ones(2))  # nothing requires grad: nothing to get wrong
    a.select(0, 0).copy_(b)  # an ordinary view: recorded
    assert a.requires_grad


def test_a_view_requires_grad_once_an_in_place_op_made_its_base_require_it():
    r = tg.ones(1, dtype=tg.float64, requires_grad=True)
    x = tg.ones(5, dtype=tg.float64)
    v = x.select(0, 1)
    assert not v.requires_grad and v.grad_fn is None
    x.mul_(r * 3)
    assert v.requires_grad
    (v * v).backward()  # v = 3 r: d(v^2)/dr = 18 r
    np.testing.assert_allclose(r.grad.numpy(), [18.0])


def test_the_gradient_of_a_written_region_may_come_in_broadcast():
    # AsStridedScatterBackward0's rule reads the region from a gradient laid out like its
    # output; an expanded one (sum's) is laid out first
    r = tg.ones(1, dtype=tg.float64, requires_grad=True)

    def fn(r):
        x = tg.ones(5, dtype=tg.float64)
        v = x.select(0, 1)
        x.add_(r)
        return v

    assert tg.autograd.gradgradcheck(fn, [r])


# -- inference tensors ----------------------------------------------------------------------------

def test_a_view_of_an_inference_tensor_is_a_plain_inference_tensor():
    with tg.inference_mode():
        c = tg.ones(2, 3, requires_grad=True)
    out = c.view(-1)
    assert tg.is_inference(out) and not out.requires_grad and not out._is_view() and out.is_leaf
    with tg.inference_mode():
        c.transpose_(0, 1)  # in place, in inference mode: still an inference tensor
    assert c.shape == (3, 2) and c.requires_grad and tg.is_inference(c)
    d = c.detach()
    with pytest.raises(RuntimeError, match="^Inplace update to inference tensor outside "
                                           "InferenceMode"):
        d.t_()


# -- in-place view ops ----------------------------------------------------------------------------

def test_t_in_place_gives_a_tensor_the_transposed_geometry_and_history():
    b, leaf = _nonleaf(2, 3)
    w = tg.arange(6.0, dtype=tg.float64).reshape(3, 2) + 1
    assert b.t_() is b
    assert b.shape == (3, 2) and b.stride() == (1, 3) and b._version == 1
    assert b.grad_fn.name() == "TBackward0"
    (b * w).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), w.t().numpy())


def test_an_in_place_view_op_on_a_view_keeps_its_base_and_the_gradients_right():
    b, leaf = _nonleaf(2, 3)
    v = b[:, 1:]
    v.t_()  # (2, 2) -> its transpose, still viewing b
    assert v._base is b and v._version == 1
    v.mul_(_f64([[1.0], [10.0]]))  # row 0 of v.t_() is column 1 of b
    b.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), [[1, 1, 10], [1, 1, 10]])


def test_as_strided_unsqueeze_and_squeeze_in_place():
    b, leaf = _nonleaf(2, 3)
    v = b.view(6)
    v.unsqueeze_(0)
    assert v.shape == (1, 6)
    v.squeeze_()
    v.as_strided_((2,), (2,), 1)
    assert v.tolist() == [1.0, 3.0] and v.storage_offset() == 1 and v._version == 3
    (v * _f64([3.0, 5.0])).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), [[0, 3, 0], [5, 0, 0]])


def test_in_place_view_ops_follow_the_view_rules():
    b, leaf = _nonleaf(2, 3)
    with tg.no_grad():
        v = b.view_as(b)
    with pytest.raises(RuntimeError, match="^" + NO_GRAD):
        v.transpose_(0, 1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.t_()
    u = b.unbind()[0]
    with tg.no_grad():
        u.unsqueeze_(0)  # allowed under no_grad; the later write is not
    with pytest.raises(RuntimeError, match=MULTI):
        u.add_(1)


# -- unsafe_split ---------------------------------------------------------------------------------

@pytest.mark.parametrize("split", [lambda t: t.unsafe_split(1), lambda t: t.unsafe_chunk(3),
                                   lambda t: t.unsafe_split_with_sizes((1, 1, 1))])
def test_unsafe_split_pieces_are_not_views_and_may_be_modified(split):
    a = tg.arange(9.0, dtype=tg.float64).reshape(3, 3).requires_grad_()
    b = a * 1
    s1, s2, _ = split(b)
    assert not s1._is_view() and s1.grad_fn.name().startswith("UnsafeSplit")
    s1.mul_(s2)  # allowed (split's pieces refuse it), and b's version is not bumped
    assert b._version == 0 and s1._version == 1
    assert b[0].tolist() == [0.0, 4.0, 10.0]  # the same memory
    s1.sum().backward()  # d(s1 * s2)/da: s2 for row 0, s1 (before) for row 1
    np.testing.assert_allclose(a.grad.numpy(), [[3, 4, 5], [0, 1, 2], [0, 0, 0]])


# -- storage, set_, resize_ -----------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_storage_describes_all_the_memory_a_tensor_views():
    x = tg.randn(5)
    p = x[:4].detach()
    assert len(p.storage()) == 5 and p.storage().size() == 5
    assert p.storage().data_ptr() == x.data_ptr() == x[2:].untyped_storage().data_ptr()
    assert p.untyped_storage().nbytes() == len(p.untyped_storage()) == 20
    assert p.storage().dtype is tg.float32 and p.storage().element_size() == 4
    assert tg.arange(3.0).storage().tolist() == [0.0, 1.0, 2.0]


def test_set_shares_memory_keeps_its_version_counter_and_renews_a_leafs_accumulator():
    x = tg.rand(2, requires_grad=True)
    edge = tg.autograd.graph.get_gradient_edge(x)
    out = x.clone()
    z = tg.zeros(3)
    with tg.no_grad():
        x.set_(z[1:])
    assert x.shape == (2,) and x._version == 1 and z._version == 0
    with tg.no_grad():
        x.add_(1)
    assert z.tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="to not have been used in the graph"):
        tg.autograd.grad(out.sum(), x)
    assert tg.autograd.grad(out.sum(), edge)[0].tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.set_(z)


def test_set_from_a_storage_or_nothing():
    s = tg.arange(6.0)
    q = tg.zeros(1)
    q.set_(s.untyped_storage(), 1, (2, 2), (1, 2))
    assert q.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    q.set_()
    assert q.shape == (0,) and q._version == 2
    with pytest.raises(RuntimeError, match="^Could not set tensor of type double to a tensor of "
                                           "type float$"):
        tg.zeros(2).set_(tg.zeros(2, dtype=tg.float64))


def test_set_to_a_tensor_that_requires_grad_has_no_derivative():
    y = tg.rand(3, requires_grad=True)
    x = tg.rand(3)
    x.set_(y)
    assert x.requires_grad and x.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for set_ is not implemented"):
        x.sum().backward()


def test_resize_bumps_the_version_only_when_the_shape_changes():
    x = tg.tensor([1.0, 2.0])
    x.resize_((1, 2))
    assert x._version == 1 and x.tolist() == [[1.0, 2.0]]
    x.resize_as_(tg.ones(1, 2))
    assert x._version == 1
    x.resize_(3, 2)  # grows: the first elements keep their values
    assert x._version == 2 and x.shape == (3, 2) and x.view(-1)[:2].tolist() == [1.0, 2.0]
    v = tg.arange(4.0)[1:3]
    v.resize_(3)  # fits in the storage: still a view, from the same offset
    assert v.tolist() == [1.0, 2.0, 3.0] and v._is_view() and v.storage_offset() == 1
    with pytest.raises(RuntimeError, match="^cannot resize variables that require grad$"):
        tg.zeros(2, requires_grad=True).resize_(3)
    with tg.inference_mode():
        c = tg.ones(1, 2, 3, requires_grad=True)
        c.resize_(1, 2)  # inference mode skips autograd's check
    assert c.shape == (1, 2) and c.requires_grad


# -- grad_dtype -----------------------------------------------------------------------------------

def test_grad_dtype_defaults_to_the_dtype_and_checks_assigned_gradients():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad_dtype is tg.float32
    x.grad_dtype = tg.float16
    with pytest.raises(RuntimeError, match="^attempting to assign a gradient with dtype 'float' "
                                           "to a tensor with grad_dtype 'Half'"):
        x.grad = tg.ones(2)
    x.grad_dtype = None  # any dtype
    x.grad = tg.ones(2, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="^Cannot set grad_dtype to 'Half' because there is "
                                           "already a gradient with dtype 'double'"):
        x.grad_dtype = tg.float16
    x.grad_dtype = tg.float64  # matches the gradient there
    with pytest.raises(RuntimeError, match="^grad_dtype can only be accessed on leaf tensors"):
        _ = (x * 2).grad_dtype
    with pytest.raises(RuntimeError, match="^grad_dtype can only be set on leaf tensors"):
        (x * 2).grad_dtype = None


# -- detach_ and forward AD -----------------------------------------------------------------------

def test_detach_in_place_drops_the_forward_gradient():
    with fwAD.dual_level():
        dual = fwAD.make_dual(tg.ones(2), tg.ones(2)).clone()
        dual.detach_()
        assert fwAD.unpack_dual(dual * 2).tangent is None


# -- both backends --------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_storage_set_and_resize_on_each_backend(device):
    x = tg.arange(6.0, device=device)
    v = x[2:4]
    assert len(v.storage()) == 6 and v.untyped_storage().data_ptr() == x.data_ptr()
    q = tg.zeros(1, device=device)
    q.set_(v)
    assert q.data_ptr() == v.data_ptr() and q.cpu().tolist() == [2.0, 3.0]
    q.set_(x.untyped_storage(), 1, (2, 2), (1, 2))
    assert q.cpu().tolist() == [[1.0, 3.0], [2.0, 4.0]]
    v.resize_(4)  # fits: the same memory
    assert v.cpu().tolist() == [2.0, 3.0, 4.0, 5.0] and v._is_view()
    v.resize_(5)  # grows: new memory, the values kept
    assert v.cpu().tolist()[:4] == [2.0, 3.0, 4.0, 5.0] and not v._is_view()
    assert len(v.untyped_storage()) == 7 * 4  # (from its storage offset, 2, on)


def test_same_meta_compares_layouts_with_their_storage_sizes():
    from tritongrad.autograd.storage import has_same_meta, new_with_same_meta
    primal = tg.arange(5.0)[:4]
    assert not has_same_meta(primal, tg.zeros(4))  # a storage of 5 elements against one of 4
    assert has_same_meta(primal, tg.zeros(5)[:4])
    assert not has_same_meta(primal, tg.zeros(5)[1:])  # another offset
    assert has_same_meta(tg.zeros(1, 3), tg.zeros(3, 1).t())  # a size-1 dim's stride is free
    copy = new_with_same_meta(primal, tg.ones(4))
    assert has_same_meta(primal, copy) and copy.tolist() == [1.0] * 4


def test_volatile_is_gone_with_pytorchs_warnings():
    x = tg.ones(2)
    with pytest.warns(UserWarning, match=r"volatile was removed \(Variable.volatile is always"):
        assert x.volatile is False
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        x.volatile = True
    with pytest.warns(UserWarning):
        assert x.volatile is False


def test_same_meta_ignores_offsets_and_strides_of_empty_tensors():
    from tritongrad.autograd.storage import has_same_meta
    base = tg.zeros(4)
    assert has_same_meta(base[1:1], tg.zeros(4)[3:3])  # nothing indexed: offsets do not count
    assert not has_same_meta(base[1:2], tg.zeros(4)[3:4])  # one element: the offset counts
