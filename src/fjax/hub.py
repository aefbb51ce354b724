"""``torch.hub``: pretrained weights by URL, cached on disk (``load_state_dict_from_url``, which
model definitions such as torchvision's call), read by ``fjax.load``. The cache directory is
``$TORCH_HOME/hub`` (default ``~/.cache/torch/hub``), as torch's, so weights torch already
downloaded are found. Loading a model's code from a GitHub repository (``load``, ``list``,
``help``) is not supported: it runs the repository's ``hubconf.py`` against real torch.

Example::

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> fjax.save({"w": fjax.ones(2)}, os.path.join(d, "w.pt"))
    >>> sd = fjax.hub.load_state_dict_from_url("file://" + os.path.join(d, "w.pt"), model_dir=os.path.join(d, "cache"))
    >>> sd["w"].tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

_hub_dir: list = [None]
_HASH = re.compile(r"-([a-f0-9]*)\.")  # torch's file-name convention: name-<sha256 prefix>.ext


def get_dir() -> str:
    """Where downloads are cached: ``set_dir``'s directory, else ``$TORCH_HOME/hub``."""
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    torch_home = os.path.expanduser(
        os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch"))
    )
    return os.path.join(torch_home, "hub")


def set_dir(d) -> None:
    _hub_dir[0] = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download ``url`` to ``dst`` (through a temporary file in the same directory, so ``dst`` is
    never left half-written); with ``hash_prefix``, its SHA-256 must start with it."""
    dst = os.path.expanduser(dst)
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    sha = hashlib.sha256()
    with urllib.request.urlopen(url) as src:  # noqa: S310 - a URL the program gave
        total = src.headers.get("Content-Length") if hasattr(src, "headers") else None
        bar = _bar(int(total) if total else None, progress)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dst) or ".")
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
                    sha.update(chunk)
                    bar(len(chunk))
            bar(None)
            if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
                raise RuntimeError(
                    f"fjax.hub.download_url_to_file: invalid hash value for {url} "
                    f"(expected a SHA-256 starting with {hash_prefix!r}, got {sha.hexdigest()!r})"
                )
            shutil.move(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def _bar(total, on):
    """A one-line progress report on stderr (bytes downloaded of ``total``)."""
    done = [0]

    def step(n):
        if not on:
            return
        if n is None:
            sys.stderr.write("\n")
            return
        done[0] += n
        of = f" of {total / 1e6:.1f} MB" if total else ""
        sys.stderr.write(f"\rdownloading: {done[0] / 1e6:.1f} MB{of}")

    return step


def load_state_dict_from_url(
    url: str,
    model_dir: str | None = None,
    map_location=None,
    progress: bool = True,
    check_hash: bool = False,
    file_name: str | None = None,
    weights_only: bool = False,
):
    """Download ``url`` into ``model_dir`` (default ``get_dir()/checkpoints``) unless it is there,
    and ``fjax.load`` it. ``check_hash``: the file name's ``-<hex>.`` part must prefix its SHA-256."""
    from .serialization import load as _load

    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else os.path.expanduser(model_dir)
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        match = _HASH.search(name) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    return _load(cached, map_location=map_location, weights_only=weights_only)


def _repository(*args, **kwargs):
    raise NotImplementedError(
        "fjax.hub: loading a model's code from a GitHub repository (hub.load/list/help) is not supported; "
        "build the model from its Python class and load its weights with fjax.hub.load_state_dict_from_url"
    )


load = list = help = _repository  # noqa: A001 - torch.hub's names
