"""Top-level names PyTorch code reaches for (session 40): ``from_file``, ``Tag``,
``parse_schema``, the symbolic types, ``AcceleratorError``, ``torch.storage``, the quantized
tensors' functional forms and the Tensor methods Python 2 named. Each checked against torch
2.13's behaviour (recorded, and live where torch is installed)."""

import numpy as np
import pytest

import tritongrad as tg


def _from_file(torch, path) -> list:
    np.arange(6, dtype=np.float32).tofile(path / "a.bin")
    out = [torch.from_file(str(path / "a.bin"), size=6).tolist()]
    shared = torch.from_file(str(path / "a.bin"), shared=True, size=4)
    shared[0] = 100
    out.append(np.fromfile(path / "a.bin", np.float32).tolist())
    private = torch.from_file(str(path / "a.bin"), shared=False, size=3)
    private[1] = -1
    out += [np.fromfile(path / "a.bin", np.float32).tolist(), private.tolist()]
    for kwargs in ({"size": 100}, {"size": 2, "filename": str(path / "none.bin")}):
        try:
            torch.from_file(**{"filename": str(path / "a.bin"), **kwargs})
        except RuntimeError as e:
            out.append(str(e).replace(str(path), "DIR"))
    made = torch.from_file(str(path / "new.bin"), shared=True, size=3)
    out += [made.tolist(), (path / "new.bin").stat().st_size,
            torch.from_file(str(path / "a.bin")).tolist(),
            torch.from_file(str(path / "a.bin"), size=2, dtype=torch.float64).tolist()]
    return out


FROM_FILE = [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [100.0, 1.0, 2.0, 3.0, 4.0, 5.0],
             [100.0, 1.0, 2.0, 3.0, 4.0, 5.0], [100.0, -1.0, 2.0],
             "file <DIR/a.bin> size <24> is smaller than the required mapping size <400>",
             "unable to open file <DIR/none.bin> in read-only mode: No such file or directory "
             "(2)", [0.0, 0.0, 0.0], 12, [], [0.007812501943590178, 32.00000762939453]]


def test_from_file(tmp_path):
    assert _from_file(tg, tmp_path) == FROM_FILE
    shared = tg.from_file(str(tmp_path / "a.bin"), shared=True, size=6)
    assert float((shared * 2).sum()) == 2 * (100 + 1 + 2 + 3 + 4 + 5)


def test_from_file_against_torch(tmp_path):
    torch = pytest.importorskip("torch", minversion="2.13")
    (tmp_path / "t").mkdir()
    (tmp_path / "g").mkdir()
    got, want = _from_file(tg, tmp_path / "g"), _from_file(torch, tmp_path / "t")
    assert got == want  # (each run's paths print as DIR)


def test_tags_schemas_and_types():
    assert [t.name for t in tg.Tag][:4] == ["core", "cudagraph_unsafe",
                                           "data_dependent_output", "dynamic_output_shape"]
    assert tg.Tag.pt2_compliant_tag.value == 17 and str(tg.Tag.core) == "Tag.core"
    schema = tg.parse_schema("aten::foo.bar(Tensor x, int a=1, *, float b=0.5) -> Tensor")
    assert isinstance(schema, tg.FunctionSchema)
    assert (schema.name, schema.overload_name) == ("aten::foo", "bar")
    assert [(a.name, a.kwarg_only) for a in schema.arguments] == [
        ("x", False), ("a", False), ("b", True)]
    assert str(schema) == "aten::foo.bar(Tensor x, int a=1, *, float b=0.5) -> Tensor"
    assert not isinstance(3, tg.SymInt) and not isinstance(2.0, tg.types.py_sym_types)
    assert tg.types.Storage is tg.UntypedStorage and tg.types.Tensor is tg.Tensor
    assert tg.storage.TypedStorage is tg.TypedStorage and tg.Storage is tg.FloatStorage
    from tritongrad.runtime.driver import CudaError
    assert issubclass(CudaError, tg.AcceleratorError)
    assert issubclass(tg.AcceleratorError, RuntimeError)


def test_tags_and_schemas_against_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    assert [(n, t.value) for n, t in torch.Tag.__members__.items()] == \
        [(t.name, t.value) for t in tg.Tag]
    for text in ("aten::foo.bar(Tensor x, int a=1, *, float b=0.5) -> Tensor",
                 "ns::op(Tensor(a!) x, int[2] k=1, Scalar s=2) -> (Tensor values, Tensor i)"):
        assert str(tg.parse_schema(text)) == str(torch.parse_schema(text))


def _quantized(torch) -> list:
    q = torch.quantize_per_tensor(torch.ones(2), 0.5, 1, torch.quint8)
    out = [torch.q_scale(q), torch.q_zero_point(q), torch.int_repr(q).tolist()]
    for name in ("q_scale", "int_repr", "q_per_channel_axis"):
        try:
            getattr(torch, name)(torch.ones(2))
        except NotImplementedError as e:
            out.append(str(e).split(" with")[0])
    t = torch.ones(2)
    out += [t.dequantize().tolist(), t.is_distributed(), t.storage_type().__name__,
            torch.ones(1, dtype=torch.int64).storage_type().__name__,
            torch.tensor(2.5).__long__(), torch.tensor(0.0).__nonzero__(),
            t.__div__(2).tolist(), t.__rdiv__(4).tolist()]
    t.__idiv__(4)
    out.append(t.tolist())
    return out


QUANTIZED = [0.5, 1, [3, 3], "Could not run 'aten::q_scale'", "Could not run 'aten::int_repr'",
             "Could not run 'aten::q_per_channel_axis'", [1.0, 1.0], False, "FloatStorage",
             "LongStorage", 2, False, [0.5, 0.5], [4.0, 4.0], [0.25, 0.25]]


def test_quantized_functions_and_legacy_methods():
    assert _quantized(tg) == QUANTIZED
    x = tg.ones(2, requires_grad=True)
    x.__rdiv__(2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-2.0, -2.0])


def test_quantized_functions_against_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    assert _quantized(tg) == _quantized(torch)
