"""Stores, object point-to-point, subgroups and the small helpers of tritongrad.distributed.

The stores run in this process (HashStore, PrefixStore, with threads) and across two
processes (FileStore through one file, TCPStore with the master here and a client in a
child); the children load ``distributed/_store.py`` by path (it needs only the standard
library), so they start in a fraction of a second. The expected values were recorded from
PyTorch 2.13's stores, and are compared with them live where torch is installed. Object p2p
and subgroups run under a real ``mpirun`` (3 ranks) in ``_worker_distributed40.py``.
"""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
import threading

import pytest
from _launch import HERE, mpi_missing, mpirun, passed

import tritongrad.distributed as dist
from tritongrad.distributed import c10d

STORE_PY = HERE.parent.parent / "distributed" / "_store.py"
MS = datetime.timedelta(milliseconds=1)


def child(code: str, *args: str) -> subprocess.Popen:
    """A Python child with ``S``: the store module, loaded without tritongrad."""
    prelude = ("import datetime, importlib.util, sys\n"
               f"spec = importlib.util.spec_from_file_location('_store', {str(STORE_PY)!r})\n"
               "S = importlib.util.module_from_spec(spec); spec.loader.exec_module(S)\n")
    return subprocess.Popen([sys.executable, "-c", prelude + code, *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(p: subprocess.Popen) -> str:
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    return out


# -- one script of store operations, with PyTorch 2.13's results --------------------------------

SCRIPT = [  # (method, args, the result PyTorch 2.13 returned)
    ("set", ("a", "x"), None),
    ("get", ("a",), b"x"),
    ("set", ("b", b"\xff\x00"), None),
    ("get", ("b",), b"\xff\x00"),
    ("add", ("c", 3), 3),
    ("add", ("c", -5), -2),
    ("get", ("c",), b"-2"),
    ("compare_set", ("a", "x", "y"), b"y"),       # matches: set
    ("compare_set", ("a", "zz", "q"), b"y"),      # differs: the current value
    ("compare_set", ("new", "", "v"), b"v"),      # absent, expected "": set
    ("compare_set", ("new2", "k", "v"), b"k"),    # absent: expected back, nothing set
    ("check", (["new2"],), False),
    ("check", (["a", "new"],), True),
    ("delete_key", ("new",), True),
    ("delete_key", ("new",), False),
    ("append", ("ap", "1"), None),
    ("append", ("ap", b"2"), None),
    ("get", ("ap",), b"12"),
    ("add", ("ap", 1), 13),                       # a numeric value is a counter too
    ("multi_set", (["m1", "m2"], ["1", b"2"]), None),
    ("multi_get", (["m1", "m2"],), [b"1", b"2"]),
    ("num_keys", (), 6),
    ("wait", (["a", "m1"],), None),
]


def run_script(store) -> list:
    return [getattr(store, name)(*args) for name, args, _ in SCRIPT]


def tcp_master(**kw):
    return dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                         timeout=datetime.timedelta(seconds=10), **kw)


MAKERS = {  # each store, made in a test's tmp_path
    "HashStore": lambda tmp: dist.HashStore(),
    "FileStore": lambda tmp: dist.FileStore(str(tmp / "store")),
    "TCPStore": lambda tmp: tcp_master(),
}


@pytest.mark.parametrize("kind", list(MAKERS))
def test_store_operations_match_pytorch(kind, tmp_path):
    assert run_script(MAKERS[kind](tmp_path)) == [expected for _, _, expected in SCRIPT]


def test_store_script_against_live_torch(tmp_path):
    td = pytest.importorskip("torch.distributed")
    expected = [e for _, _, e in SCRIPT]
    assert run_script(td.HashStore()) == expected
    assert run_script(td.TCPStore("127.0.0.1", 0, None, True)) == expected
    # PyTorch's FileStore (an append-only log) also answers True to deleting an absent key,
    # and its num_keys counts deleted keys; tritongrad's answers as the other two stores
    theirs = run_script(td.FileStore(str(tmp_path / "t"), 1))
    quirks = {i for i, (name, _, _) in enumerate(SCRIPT) if name == "num_keys"} | {14}
    assert SCRIPT[14][:2] == ("delete_key", ("new",)) and theirs[14] is True
    assert [r for i, r in enumerate(theirs) if i not in quirks] == \
        [e for i, e in enumerate(expected) if i not in quirks]


def test_error_classes_have_pytorchs_hierarchy():
    assert issubclass(dist.DistError, RuntimeError)
    for sub in (dist.DistStoreError, dist.DistNetworkError, dist.DistBackendError):
        assert sub.__mro__[1:3] == (dist.DistError, RuntimeError)


@pytest.mark.parametrize("kind, message", [
    ("HashStore", "Wait timeout"),
    ("FileStore", "Timeout waiting for key: nokey after 50 ms"),
    ("TCPStore", "wait timeout after 50ms, keys: /nokey"),
])
def test_get_and_wait_time_out_with_pytorchs_messages(kind, message, tmp_path):
    store = MAKERS[kind](tmp_path)
    default = datetime.timedelta(seconds=10 if kind == "TCPStore" else 300)  # PyTorch's: 300
    assert store.timeout == default
    store.set_timeout(50 * MS)
    assert store.timeout == 50 * MS
    for call in (lambda: store.get("nokey"), lambda: store.multi_get(["nokey"]),
                 lambda: store.wait(["nokey"])):
        with pytest.raises(dist.DistStoreError, match=f"^{re.escape(message)}$"):
            call()
    with pytest.raises(dist.DistStoreError):
        store.wait(["nokey"], datetime.timedelta(milliseconds=20))


def test_hash_store_get_blocks_until_another_thread_sets():
    store = dist.HashStore()
    threading.Timer(0.05, store.set, ("late", "v")).start()
    assert store.get("late") == b"v"
    # add is atomic: 4 threads x 200 increments
    threads = [threading.Thread(target=lambda: [store.add("n", 1) for _ in range(200)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get("n") == b"800"


def test_store_argument_errors():
    store = dist.HashStore()
    with pytest.raises(TypeError, match="set\\(\\): value must be a str or bytes, got int"):
        store.set("x", 1)
    with pytest.raises(TypeError, match="get\\(\\): key must be a str, got int"):
        store.get(1)
    with pytest.raises(TypeError, match="set_timeout\\(\\): timeout must be a "
                                        "datetime.timedelta"):
        store.set_timeout(5)
    store.set("word", "abc")
    with pytest.raises(ValueError, match="not an integer"):  # PyTorch: ValueError('stoll')
        store.add("word", 1)
    with pytest.raises(RuntimeError, match="Not implemented"):  # the abstract base
        dist.Store().set("a", "b")


def test_prefix_store():
    base = dist.HashStore()
    p = dist.PrefixStore("pre", base)
    p.set("k", "v")
    assert base.get("pre/k") == b"v" and p.get("k") == b"v"
    assert p.add("n", 2) == 2 and base.get("pre/n") == b"2"
    assert p.check(["k", "n"]) and not p.check(["pre/k"])
    assert p.multi_get(["k", "n"]) == [b"v", b"2"]
    base.set("other", "x")
    assert p.num_keys() == 3  # the underlying store's count, as PyTorch's
    assert p.underlying_store is base and p.timeout == base.timeout
    nested = dist.PrefixStore("inner", p)
    nested.set("z", "1")
    assert base.get("pre/inner/z") == b"1" and p.delete_key("inner/z")
    p.set_timeout(20 * MS)
    with pytest.raises(dist.DistStoreError, match="Wait timeout"):
        p.get("absent")


def test_file_store_across_two_processes(tmp_path):
    path = str(tmp_path / "store")
    kid = child("s = S.FileStore(sys.argv[1], 2)\n"
                "for _ in range(100): s.add('n', 1)\n"
                "s.set('child', 'here')\n"
                "print(s.get('parent').decode())\n", path)
    store = dist.FileStore(path, 2)
    for _ in range(100):
        store.add("n", 1)
    store.wait(["child"], datetime.timedelta(seconds=20))
    store.set("parent", "hello")
    assert finish(kid).strip() == "hello"
    assert store.get("n") == b"200"  # the lock made every read-modify-write atomic


def test_tcp_store_master_here_client_in_a_child():
    master = dist.TCPStore("127.0.0.1", 0, 2, True, wait_for_workers=False,
                           timeout=datetime.timedelta(seconds=20))
    assert master.host == "127.0.0.1" and master.port > 0 and master.libuvBackend
    kid = child("c = S.TCPStore('127.0.0.1', int(sys.argv[1]), 2, False,\n"
                "               timeout=datetime.timedelta(seconds=20))\n"
                "c.set('client', b'hi')\n"
                "print(c.add('n', 5), c.get('master').decode(), c.num_keys())\n",
                str(master.port))
    master.wait(["client"])
    master.set("master", "m")
    # "init/": each of the 2 users added itself; then client, n, master
    assert finish(kid).split() == ["5", "m", "4"]
    assert master.get("client") == b"hi" and master.get("init/") == b"2"


def test_tcp_store_network_errors():
    master = tcp_master()
    with pytest.raises(dist.DistNetworkError, match=r"^The server socket has failed to "
                                                    rf"listen on any local network address\. "
                                                    rf"port: {master.port}, .*EADDRINUSE"):
        dist.TCPStore("127.0.0.1", master.port, is_master=True)
    with pytest.raises(dist.DistStoreError, match=r"^Timed out after \d+ seconds waiting "
                                                  r"for clients\. 1/2 clients joined\.$"):
        dist.TCPStore("127.0.0.1", 0, 2, True, timeout=datetime.timedelta(milliseconds=200))
    import socket
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    with pytest.raises(dist.DistNetworkError, match=r"^The client socket has timed out after "
                                                    rf"200ms while trying to connect to "
                                                    rf"\(127\.0\.0\.1, {free}\)\.$"):
        dist.TCPStore("127.0.0.1", free, timeout=datetime.timedelta(milliseconds=200))


def test_tcp_store_multi_tenant_shares_the_server():
    a = tcp_master(multi_tenant=True)
    b = dist.TCPStore("127.0.0.1", a.port, is_master=True, multi_tenant=True)
    a.set("k", "v")
    assert b.get("k") == b"v"


# -- small helpers (PyTorch 2.13's values and messages) -------------------------------------------

def test_small_helpers(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with pytest.raises(RuntimeError, match=re.escape(
            "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
            "`get_node_local_rank` to work, assuming you are not running in a multi-device "
            "context and want the code to run locally instead.")):
        dist.get_node_local_rank()
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    monkeypatch.setenv("LOCAL_RANK", "5")
    assert dist.get_node_local_rank(fallback_rank=3) == 5
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert dist.is_torchelastic_launched() is False
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job")
    assert dist.is_torchelastic_launched() is True
    assert dist.is_backend_available("MPI") == dist.is_mpi_available()
    assert not dist.is_backend_available("gloo") and not dist.is_backend_available("foo")
    assert dist.get_pg_count() == 0  # no process group in this process
    R = dist.ReduceOp
    assert [dist.supports_complex(op) for op in (R.SUM, R.AVG, R.MAX, R.MIN, R.PRODUCT,
                                                 R.BAND, R.BOR, R.BXOR)] == \
        [True, True, False, False, False, False, False, False]
    assert dist.default_pg_timeout == datetime.timedelta(minutes=30)


def test_debug_level(monkeypatch):
    L = dist.DebugLevel
    assert list(L.__members__) == ["OFF", "INFO", "DETAIL"]
    assert [int(v) for v in L] == [0, 1, 2] and L(1) is L.INFO
    assert repr(L.DETAIL) == str(L.DETAIL) == "DebugLevel.DETAIL"
    monkeypatch.setattr(c10d._state, "debug_level", None)
    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
    assert dist.get_debug_level() is L.OFF
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "detail")
    assert dist.get_debug_level() is L.DETAIL  # followed until a level is set
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "info")
    dist.set_debug_level_from_env()
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "DETAIL")
    assert dist.get_debug_level() is L.INFO  # fixed once set
    dist.set_debug_level(L.OFF)
    assert dist.get_debug_level() is L.OFF
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "bogus")
    with pytest.raises(ValueError, match="^The value of TORCH_DISTRIBUTED_DEBUG must be OFF, "
                                         "INFO, or DETAIL.$"):
        dist.set_debug_level_from_env()
    with pytest.raises(TypeError, match="set_debug_level"):
        dist.set_debug_level("DETAIL")


def test_init_process_group_store_rules():
    store = dist.HashStore()
    for kwargs, exc, message in [
        ({"store": store}, AssertionError, "world_size must be positive if using store"),
        ({"store": store, "world_size": 2}, AssertionError,
         "rank must be non-negative if using store"),
        ({"store": store, "world_size": 2, "rank": 0, "init_method": "env://"},
         AssertionError,
         "Cannot specify both init_method and store."),
        ({"store": {"not": "a store"}, "world_size": 2, "rank": 0}, TypeError,
         "store must be a torch.distributed Store"),
    ]:
        with pytest.raises(exc, match=re.escape(message)):
            dist.init_process_group("mpi", **kwargs)
    assert not dist.is_initialized()


def test_new_subgroups_default_size_needs_cuda(monkeypatch):
    from tritongrad import cuda
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="^Default group size only takes effect when CUDA is "
                                         "available.If your subgroup"):
        dist.new_subgroups()
    with pytest.raises(RuntimeError, match="Default process group has not been initialized"):
        dist.new_subgroups(1)
    with pytest.raises(ValueError, match="'ranks_per_subgroup_list' cannot be empty"):
        dist.new_subgroups_by_enumeration(None)


# -- real processes -------------------------------------------------------------------------------

@pytest.mark.skipif(mpi_missing() is not None, reason=str(mpi_missing()))
def test_object_p2p_subgroups_and_stores_on_3_ranks():
    p = mpirun(3, HERE / "_worker_distributed40.py")
    names = set(re.findall(r"^def (check_\w+)", (HERE / "_worker_distributed40.py")
                           .read_text(), re.MULTILINE))
    assert passed(p) == names and len(names) == 9
