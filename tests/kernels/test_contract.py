"""Every backend exports every CONTRACT name (NumPy and Triton with the same signatures; the meta
backend forwards its arguments), and nothing imports torch."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest
from tritongrad.kernels import meta as mk
from tritongrad.kernels import numpy as nk
from tritongrad.kernels import triton as tk

from tritongrad import kernels


@pytest.mark.parametrize("mod", [nk, tk, mk], ids=["numpy", "triton", "meta"])
def test_backend_exports_every_contract_name(mod):
    missing = [n for n in kernels.CONTRACT if not callable(getattr(mod, n, None))]
    assert not missing, f"{mod.__name__} lacks {missing}"
    assert sorted(mod.__all__) == sorted(kernels.CONTRACT)


@pytest.mark.parametrize("name", kernels.CONTRACT)
def test_signatures_match(name):
    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert params(getattr(tk, name)) == params(getattr(nk, name))


def test_backend_dispatch():
    from tritongrad.runtime.device import device

    assert kernels.backend(device("cpu")) is nk
    assert kernels.backend(device("cuda", 0)) is tk
    assert kernels.backend(device("meta")) is mk


def test_triton_backend_never_imports_torch():
    code = ("import sys, tritongrad.kernels.triton as tk; "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
