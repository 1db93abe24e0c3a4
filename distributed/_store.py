"""Key-value stores, as ``torch.distributed``'s: ``HashStore``, ``FileStore``, ``TCPStore``
and ``PrefixStore``, with the ``Dist*Error`` exceptions.

A store maps string keys to ``bytes`` values (``str`` values are stored UTF-8 encoded, as
PyTorch's); ``get`` blocks until the key exists, up to the store's timeout. Processes use one
to exchange small pieces of setup data (addresses, counters, flags).

Every concrete store here runs the same small operations (``_OPS``: pure functions on a
``dict``) inside its own critical section, so the semantics are written once:

  * ``HashStore``: a dict in this process, under a lock (thread-safe);
  * ``FileStore``: a pickled dict in one file, under an exclusive ``flock`` (processes on
    one machine, or on a shared file system with working locks);
  * ``TCPStore``: a ``HashStore`` served by a thread of the master process; every instance
    (the master's included) is a client that sends each operation over a socket.
"""

from __future__ import annotations

import datetime
import io
import os
import pickle
import socket
import struct
import threading
import time
from typing import ClassVar

__all__ = ["DistBackendError", "DistError", "DistNetworkError", "DistStoreError",
           "FileStore", "HashStore", "PrefixStore", "Store", "TCPStore"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)  # PyTorch's kDefaultStoreTimeout


class DistError(RuntimeError):
    """Exception raised when an error occurs in the distributed library"""


class DistBackendError(DistError):
    """Exception raised when a backend error occurs in distributed"""


class DistStoreError(DistError):
    """Exception raised when an error occurs in the distributed store"""


class DistNetworkError(DistError):
    """Exception raised when a network error occurs in distributed"""


def _key(key, op: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"{op}(): key must be a str, got {type(key).__name__}")
    return key


def _value(value, op: str) -> bytes:
    """A value as stored: bytes (a str is UTF-8 encoded, as PyTorch's pybind conversion)."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{op}(): value must be a str or bytes, got {type(value).__name__}")


def _keys(keys, op: str) -> list[str]:
    if isinstance(keys, str) or not isinstance(keys, (list, tuple)):
        raise TypeError(f"{op}(): keys must be a list of str, got {type(keys).__name__}")
    return [_key(k, op) for k in keys]


def _as_timeout(timeout, op: str) -> datetime.timedelta:
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"{op}(): timeout must be a datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    return timeout


# -- the operations, once for every store: pure functions of the key-value dict ----------------

def _op_set(d: dict, key: str, value: bytes) -> None:
    d[key] = value


def _op_get(d: dict, key: str) -> bytes:
    return d[key]


def _op_add(d: dict, key: str, amount: int) -> int:
    old = d.get(key, b"0")
    try:
        value = int(old) + amount
    except ValueError:  # PyTorch: ValueError('stoll'), from C++'s std::stoll
        raise ValueError(f"add(): the value of key '{key}' is not an integer: {old!r} "
                         f"(stoll)") from None
    d[key] = str(value).encode()
    return value


def _op_compare_set(d: dict, key: str, expected: bytes, desired: bytes) -> bytes:
    current = d.get(key)
    if (current is None and expected == b"") or current == expected:
        d[key] = desired
        return desired
    return expected if current is None else current


def _op_append(d: dict, key: str, value: bytes) -> None:
    d[key] = d.get(key, b"") + value


def _op_multi_get(d: dict, keys: list) -> list:
    return [d[k] for k in keys]


def _op_multi_set(d: dict, keys: list, values: list) -> None:
    d.update(zip(keys, values))


def _op_check(d: dict, keys: list) -> bool:
    return all(k in d for k in keys)


def _op_delete_key(d: dict, key: str) -> bool:
    return d.pop(key, None) is not None


def _op_num_keys(d: dict) -> int:
    return len(d)


_OPS = {f.__name__[4:]: f for f in (_op_set, _op_get, _op_add, _op_compare_set, _op_append,
                                     _op_multi_get, _op_multi_set, _op_check, _op_delete_key,
                                     _op_num_keys)}


class Store:
    """Base class for all store implementations, such as the 3 provided by PyTorch
    distributed: (:class:`~torch.distributed.TCPStore`, :class:`~torch.distributed.FileStore`,
    and :class:`~torch.distributed.HashStore`).

    A Python subclass overrides the methods it supports; the others raise RuntimeError."""

    def __init__(self):
        self._timeout = _DEFAULT_TIMEOUT

    def _unsupported(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__}: Not implemented.")

    set = get = add = compare_set = wait = check = delete_key = num_keys = _unsupported
    multi_get = multi_set = append = _unsupported

    @property
    def timeout(self) -> datetime.timedelta:
        """Gets the timeout of the store."""
        return self._timeout

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        """Sets the store's default timeout. This timeout is used during initialization and in
        :meth:`~torch.distributed.store.wait` and :meth:`~torch.distributed.store.get`."""
        self._timeout = _as_timeout(timeout, "set_timeout")


class _DictStore(Store):
    """A store whose state is one dict: subclasses give ``_apply`` (run an ``_OPS`` entry
    atomically on the dict), ``_wait_for`` (block until keys exist) and ``_timeout_message``."""

    def _apply(self, op: str, *args):
        raise NotImplementedError

    def _wait_for(self, keys: list, timeout: datetime.timedelta) -> bool:
        raise NotImplementedError

    def _timeout_message(self, keys: list, timeout: datetime.timedelta) -> str:
        return "Wait timeout"

    def _await(self, keys: list, timeout: datetime.timedelta | None) -> None:
        timeout = self._timeout if timeout is None else timeout
        if not self._wait_for(keys, timeout):
            raise DistStoreError(self._timeout_message(keys, timeout))

    def set(self, key: str, value) -> None:
        """Inserts the key-value pair into the store based on the supplied ``key`` and
        ``value``. If ``key`` already exists in the store, it will overwrite the old value
        with the new supplied ``value``."""
        self._apply("set", _key(key, "set"), _value(value, "set"))

    def get(self, key: str) -> bytes:
        """Retrieves the value associated with the given ``key`` in the store. If ``key`` is
        not present in the store, the function will wait for ``timeout``, which is defined
        when initializing the store, before throwing an exception."""
        key = _key(key, "get")
        self._await([key], None)
        return self._apply("get", key)

    def add(self, key: str, amount: int) -> int:
        """The first call to add for a given ``key`` creates a counter associated with
        ``key`` in the store, initialized to ``amount``. Subsequent calls to add with the same
        ``key`` increment the counter by the specified ``amount``. Returns the new value."""
        if not isinstance(amount, int) or isinstance(amount, bool):
            raise TypeError(f"add(): amount must be an int, got {type(amount).__name__}")
        return self._apply("add", _key(key, "add"), amount)

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Inserts the key-value pair into the store based on the supplied ``key`` and performs
        comparison between ``expected_value`` and ``desired_value`` before inserting.
        ``desired_value`` will only be set if ``expected_value`` for the ``key`` already exists
        in the store or if ``expected_value`` is an empty string. Returns the value now
        associated with ``key`` (``expected_value`` if the key is absent and was not set)."""
        return self._apply("compare_set", _key(key, "compare_set"),
                           _value(expected_value, "compare_set"),
                           _value(desired_value, "compare_set"))

    def wait(self, keys: list, timeout: datetime.timedelta | None = None) -> None:
        """Waits for each key in ``keys`` to be added to the store, and throws an exception if
        the keys have not been set by the supplied ``timeout`` (default: the store's)."""
        self._await(_keys(keys, "wait"),
                    None if timeout is None else _as_timeout(timeout, "wait"))

    def check(self, keys: list) -> bool:
        """The call to check whether a given list of ``keys`` have value stored in the store.
        This call immediately returns in normal cases."""
        return self._apply("check", _keys(keys, "check"))

    def delete_key(self, key: str) -> bool:
        """Deletes the key-value pair associated with ``key`` from the store. Returns ``true``
        if the key was successfully deleted, and ``false`` if it was not."""
        return self._apply("delete_key", _key(key, "delete_key"))

    def num_keys(self) -> int:
        """Returns the number of keys set in the store."""
        return self._apply("num_keys")

    def multi_get(self, keys: list) -> list[bytes]:
        """Retrieve all values in ``keys``. If any key in ``keys`` is not present in the
        store, the function will wait for ``timeout``."""
        keys = _keys(keys, "multi_get")
        self._await(keys, None)
        return self._apply("multi_get", keys)

    def multi_set(self, keys: list, values: list) -> None:
        """Inserts a list key-value pair into the store based on the supplied ``keys`` and
        ``values``."""
        keys = _keys(keys, "multi_set")
        if len(keys) != len(values):
            raise ValueError(f"multi_set(): got {len(keys)} keys but {len(values)} values")
        self._apply("multi_set", keys, [_value(v, "multi_set") for v in values])

    def append(self, key: str, value) -> None:
        """Append the key-value pair into the store based on the supplied ``key`` and
        ``value``. If ``key`` does not exists in the store, it will be created."""
        self._apply("append", _key(key, "append"), _value(value, "append"))


class HashStore(_DictStore):
    """A thread-safe store implementation based on an underlying hashmap. This store can be
    used within the same process (for example, by other threads), but cannot be used across
    processes."""

    def __init__(self):
        super().__init__()
        self._data: dict = {}
        self._changed = threading.Condition()

    def _apply(self, op: str, *args):
        with self._changed:
            result = _OPS[op](self._data, *args)
            self._changed.notify_all()
            return result

    def _wait_for(self, keys: list, timeout: datetime.timedelta) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: all(k in self._data for k in keys),
                                          _seconds(timeout))


def _seconds(timeout: datetime.timedelta) -> float | None:
    """A timeout in seconds for the waits (PyTorch's timedelta(0) means: no timeout)."""
    s = timeout.total_seconds()
    return None if s <= 0 else s


def _ms(timeout: datetime.timedelta) -> int:
    return int(timeout.total_seconds() * 1000)


class FileStore(_DictStore):
    """A store implementation that uses a file to store the underlying key-value pairs.

    Args:
        file_name: path of the file in which to store the key-value pairs
        world_size: The total number of processes using the store. Default is -1 (a negative
            value indicates a non-fixed number of store users).

    Every operation takes an exclusive lock on the file, reads the pairs, and writes them
    back if it changed them; ``get`` and ``wait`` poll it."""

    _POLL_S = 0.005

    def __init__(self, file_name: str, world_size: int = -1):
        super().__init__()
        self.path = os.fspath(file_name)
        self.world_size = int(world_size)
        with open(self.path, "ab"):  # created if absent (an empty file is an empty store)
            pass

    def _apply(self, op: str, *args):
        import fcntl
        with open(self.path, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
            raw = f.read()
            data = pickle.loads(raw) if raw else {}
            before = dict(data)
            result = _OPS[op](data, *args)
            if data != before:
                f.seek(0)
                f.truncate()
                f.write(pickle.dumps(data))
                f.flush()
            return result

    def _wait_for(self, keys: list, timeout: datetime.timedelta) -> bool:
        return _poll(lambda: self._apply("check", keys), _seconds(timeout), self._POLL_S)

    def _timeout_message(self, keys: list, timeout: datetime.timedelta) -> str:
        return f"Timeout waiting for key: {', '.join(keys)} after {_ms(timeout)} ms"


def _poll(done, seconds: float | None, interval: float) -> bool:
    """Calls ``done()`` until it is true (True) or ``seconds`` passed (False)."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while not done():
        if deadline is not None and time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


# -- TCPStore: a server thread in the master; every instance talks to it over a socket ----------

class _NoGlobals(pickle.Unpickler):
    """Unpickles plain data only (str, bytes, int, lists, tuples, dicts): a store message
    never names a class, so a crafted one cannot run code."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"TCPStore: unexpected object {module}.{name} in message")


def _send_msg(sock: socket.socket, obj) -> None:
    payload = pickle.dumps(obj)
    sock.sendall(struct.pack("!Q", len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("connection closed by peer")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv_msg(sock: socket.socket):
    (n,) = struct.unpack("!Q", _recv_exact(sock, 8))
    return _NoGlobals(io.BytesIO(_recv_exact(sock, n))).load()


class _Server:
    """The master's listening socket and its ``HashStore``: one daemon thread accepts, and one
    per connection answers requests ``(op, args)`` with ``("ok", result)``, ``("timeout",)``
    or ``("error", type name, message)``."""

    def __init__(self, listener: socket.socket):
        self.listener = listener
        self.store = HashStore()
        threading.Thread(target=self._accept, daemon=True, name="TCPStore-server").start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    op, args = _recv_msg(conn)
                except (ConnectionError, OSError, pickle.UnpicklingError, EOFError):
                    return
                _send_msg(conn, self._answer(op, args))

    def _answer(self, op: str, args: tuple):
        try:
            if op == "wait":
                keys, seconds = args
                done = self.store._wait_for(keys, datetime.timedelta(seconds=seconds))
                return ("ok", None) if done else ("timeout",)
            if op not in _OPS:
                return ("error", "ValueError", f"TCPStore: unknown operation {op!r}")
            return ("ok", self.store._apply(op, *args))
        except Exception as e:  # noqa: BLE001  (sent back, raised by the client as its type)
            return ("error", type(e).__name__, str(e))


_ERRORS = {"ValueError": ValueError, "TypeError": TypeError, "KeyError": KeyError}


class TCPStore(_DictStore):
    """A TCP-based distributed key-value store implementation. The server store holds the
    data, while the client stores can connect to the server store over TCP and perform
    actions such as :meth:`~torch.distributed.store.set` to insert a key-value pair,
    :meth:`~torch.distributed.store.get` to retrieve a key-value pair, etc. There should
    always be one server store initialized because the client store(s) will wait for the
    server to establish a connection.

    Args:
        host_name: The hostname or IP Address the server store should run on.
        port: The port on which the server store should listen for incoming requests
            (0 on the master: a free port, read back from ``port``).
        world_size: The total number of store users (number of clients + 1 for the server).
            Default is None (None indicates a non-fixed number of store users).
        is_master: True when initializing the server store and False for client stores.
        timeout: Timeout used by the store during initialization and for methods such as
            :meth:`~torch.distributed.store.get` and :meth:`~torch.distributed.store.wait`.
        wait_for_workers: Whether to wait for all the workers to connect with the server
            store. This is only applicable when world_size is a fixed value.
        multi_tenant: If True, all ``TCPStore`` instances in the current process with the
            same host/port will use the same underlying ``TCPServer``.
        master_listen_fd: If specified, the underlying ``TCPServer`` will listen on this file
            descriptor, which must be a socket already bound to ``port``.
        use_libuv: accepted for compatibility (this server is a Python thread).
    """

    _tenants: ClassVar[dict] = {}  # port -> _Server, for multi_tenant masters of this process
    _INIT_KEY = "init/"  # PyTorch's: every store user adds 1 to it on construction

    def __init__(self, host_name: str, port: int, world_size: int | None = None,
                 is_master: bool = False, timeout: datetime.timedelta = _DEFAULT_TIMEOUT,
                 wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd: int | None = None, use_libuv: bool = True):
        super().__init__()
        self._timeout = _as_timeout(timeout, "TCPStore")
        self.host, self.libuvBackend = host_name, bool(use_libuv)
        self._server = None
        if is_master:
            self._server = self._listen(host_name, int(port), multi_tenant, master_listen_fd)
            port = self._server.listener.getsockname()[1]
        self.port = int(port)
        self._lock = threading.Lock()  # one request at a time on this instance's socket
        self._sock = self._connect()
        if world_size is not None:
            self._apply("add", self._INIT_KEY, 1)
            if is_master and wait_for_workers:
                self._wait_workers(int(world_size))

    def _listen(self, host: str, port: int, multi_tenant: bool, fd: int | None) -> _Server:
        if multi_tenant and port and port in TCPStore._tenants:
            return TCPStore._tenants[port]
        if fd is not None:
            listener = socket.socket(fileno=fd)
        else:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                listener.bind((host, port))
            except OSError as e:
                listener.close()
                raise DistNetworkError(
                    f"The server socket has failed to listen on any local network address. "
                    f"port: {port}, useIpv6: false, code: {-e.errno}, name: "
                    f"{_errno_name(e.errno)}, message: {e.strerror.lower()}") from None
        listener.listen(128)
        server = _Server(listener)
        if multi_tenant:  # under the port it listens on (port 0 picked a free one)
            TCPStore._tenants[listener.getsockname()[1]] = server
        return server

    def _connect(self) -> socket.socket:
        """Connects to the server, retrying until the store's timeout (the master may not
        listen yet)."""
        deadline = time.monotonic() + (_seconds(self._timeout) or float("inf"))
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=1.0)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError:
                if time.monotonic() > deadline:
                    raise DistNetworkError(
                        f"The client socket has timed out after {_ms(self._timeout)}ms while "
                        f"trying to connect to ({self.host}, {self.port}).") from None
                time.sleep(0.05)

    def _wait_workers(self, world_size: int) -> None:
        ok = _poll(lambda: int(self._apply("get", self._INIT_KEY)) >= world_size,
                   _seconds(self._timeout), 0.01)
        if not ok:
            raise DistStoreError(f"Timed out after {int(self._timeout.total_seconds())} "
                                 f"seconds waiting for clients. "
                                 f"{self._apply('get', self._INIT_KEY).decode()}/{world_size} "
                                 f"clients joined.")

    def _request(self, op: str, args: tuple):
        try:
            with self._lock:
                _send_msg(self._sock, (op, args))
                return _recv_msg(self._sock)
        except (OSError, ConnectionError, EOFError) as e:
            raise DistNetworkError(f"TCPStore: lost the connection to the server at "
                                   f"{self.host}:{self.port}: {e}") from None

    def _apply(self, op: str, *args):
        reply = self._request(op, args)
        if reply[0] == "error":
            raise _ERRORS.get(reply[1], DistStoreError)(reply[2])
        return reply[1]

    def _wait_for(self, keys: list, timeout: datetime.timedelta) -> bool:
        s = _seconds(timeout)
        return self._request("wait", (keys, 0.0 if s is None else s))[0] == "ok"

    def _timeout_message(self, keys: list, timeout: datetime.timedelta) -> str:
        return f"wait timeout after {_ms(timeout)}ms, keys: {', '.join('/' + k for k in keys)}"

    def __del__(self):
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()
        server = getattr(self, "_server", None)
        if server is not None and server not in TCPStore._tenants.values():
            server.listener.close()  # the server goes with its master store, as PyTorch's


def _errno_name(errno: int) -> str:
    import errno as errnos
    return errnos.errorcode.get(errno, str(errno))


class PrefixStore(Store):
    """A wrapper around any of the 3 key-value stores (:class:`~torch.distributed.TCPStore`,
    :class:`~torch.distributed.FileStore`, and :class:`~torch.distributed.HashStore`) that
    adds a prefix to each key inserted to the store.

    Args:
        prefix: The prefix string that is prepended to each key before being inserted into
            the store.
        store: A store object that forms the underlying key-value store.
    """

    def __init__(self, prefix: str, store: Store):
        super().__init__()
        if not isinstance(store, Store):
            raise TypeError(f"PrefixStore(): store must be a Store, got "
                            f"{type(store).__name__}")
        self._prefix, self._store = _key(prefix, "PrefixStore"), store

    @property
    def underlying_store(self) -> Store:
        """Gets the underlying store object that PrefixStore wraps around."""
        return self._store

    @property
    def timeout(self) -> datetime.timedelta:
        return self._store.timeout

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        self._store.set_timeout(timeout)

    def _k(self, key: str, op: str) -> str:
        return f"{self._prefix}/{_key(key, op)}"

    def _ks(self, keys: list, op: str) -> list[str]:
        return [self._k(k, op) for k in _keys(keys, op)]

    def set(self, key, value):
        return self._store.set(self._k(key, "set"), value)

    def get(self, key):
        return self._store.get(self._k(key, "get"))

    def add(self, key, amount):
        return self._store.add(self._k(key, "add"), amount)

    def compare_set(self, key, expected_value, desired_value):
        return self._store.compare_set(self._k(key, "compare_set"), expected_value,
                                       desired_value)

    def wait(self, keys, timeout=None):
        keys = self._ks(keys, "wait")
        return self._store.wait(keys) if timeout is None else self._store.wait(keys, timeout)

    def check(self, keys):
        return self._store.check(self._ks(keys, "check"))

    def delete_key(self, key):
        return self._store.delete_key(self._k(key, "delete_key"))

    def num_keys(self):
        """The number of keys of the underlying store (all prefixes), as PyTorch's."""
        return self._store.num_keys()

    def multi_get(self, keys):
        return self._store.multi_get(self._ks(keys, "multi_get"))

    def multi_set(self, keys, values):
        return self._store.multi_set(self._ks(keys, "multi_set"), values)

    def append(self, key, value):
        return self._store.append(self._k(key, "append"), value)
