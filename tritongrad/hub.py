"""``tritongrad.hub``: PyTorch's checkpoint cache and downloads (``torch.hub``'s
``load_state_dict_from_url``, ``download_url_to_file``, ``get_dir``, ``set_dir``).

The cache is PyTorch's: ``$TORCH_HOME/hub`` (``$TORCH_HOME`` defaulting to
``$XDG_CACHE_HOME/torch``, that to ``~/.cache``), so checkpoints PyTorch has downloaded are
found without a network. Loading GitHub repositories (``hub.load``, ``hub.list``) needs their
Python code to run under PyTorch and is not provided.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["download_url_to_file", "get_dir", "load_state_dict_from_url", "set_dir"]

_hub_dir: str | None = None
# a checkpoint named <name>-<sha256 prefix>.<ext> carries the prefix of its own hash
_HASH_IN_NAME = re.compile(r"-([a-f0-9]*)\.")


def get_dir() -> str:
    """The directory downloads are cached in: the one ``set_dir`` gave, else
    ``$TORCH_HOME/hub``."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"),
                                                "torch"))
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Sets the cache directory ``get_dir`` returns (``~`` expanded)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Downloads ``url`` to the file ``dst`` (through a temporary file in its folder, moved
    into place once complete), checking that its SHA-256 starts with ``hash_prefix`` if given.

    Raises:
        RuntimeError: the download failed (no network, an HTTP error: the message names the
            url and where to put the file by hand) or the hash does not match.
    """
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    sha = hashlib.sha256()
    tmp = tempfile.NamedTemporaryFile(delete=False, dir=folder, suffix=".partial")
    try:
        try:
            with urllib.request.urlopen(urllib.request.Request(
                    url, headers={"User-Agent": "tritongrad.hub"}), timeout=30) as response:
                while chunk := response.read(1 << 16):
                    tmp.write(chunk)
                    sha.update(chunk)
        except (urllib.error.URLError, OSError) as e:
            raise RuntimeError(f"download_url_to_file: could not download {url} ({e}); without "
                               f"a network, copy the file to {dst} by hand") from e
        tmp.close()
        if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                               f'"{sha.hexdigest()}")')
        shutil.move(tmp.name, dst)
    finally:
        tmp.close()
        if os.path.exists(tmp.name):
            os.remove(tmp.name)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None, weights_only: bool = False) -> dict:
    """Loads the checkpoint at ``url`` with ``tritongrad.load``, from the cache
    (``model_dir``, default ``get_dir()/checkpoints``) when it is there, else downloading it
    first. ``check_hash`` checks the download against the hash prefix in the file's name
    (``name-<sha256 prefix>.ext``)."""
    from .serialization import load
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else model_dir
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        found = _HASH_IN_NAME.search(filename) if check_hash else None
        download_url_to_file(url, cached, found.group(1) if found else None, progress)
    return load(cached, map_location=map_location, weights_only=weights_only)
