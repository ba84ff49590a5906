"""Data helpers of ``mx.test_utils``: ``DummyIter`` and the dataset readers.

MXNet downloads MNIST/CIFAR-10 on first use; mxmod never downloads. The readers take
the files from where MXNet would have put them (the working directory or ``data/``) and
otherwise raise FileNotFoundError naming the files and the folder.
"""

from __future__ import annotations

import bz2
import importlib.util
import gzip
import os
import shutil
import struct

import numpy as np

from .io import DataIter, NDArrayIter

__all__ = [
    "DummyIter",
    "download",
    "get_mnist",
    "get_mnist_ubyte",
    "get_cifar10",
    "get_bz2_data",
    "get_mnist_iterator",
    "get_mnist_pkl",
    "get_zip_data",
    "download_model",
    "get_im2rec_path",
]


class DummyIter(DataIter):
    """Yields the first batch of ``real_iter`` forever (speed tests), as MXNet's."""

    def __init__(self, real_iter: DataIter):
        super().__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        """The first batch of the real iterator; never raises StopIteration."""
        return self.the_batch

    __next__ = next


_NOT_BUNDLED = (
    "{what} is not bundled with mxmod and mxmod never downloads: put {files} "
    "under {where} (MXNet's download location, relative to the working directory) "
    "and call again"
)


def _find(names: list, dirs: tuple) -> dict | None:
    found = {}
    for name in names:
        for d in dirs:
            for candidate in (name, name + ".gz"):
                path = os.path.join(d, candidate)
                if os.path.exists(path):
                    found[name] = path
                    break
            if name in found:
                break
        if name not in found:
            return None
    return found


_MNIST = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
]


def _read_idx(path: str, image: bool) -> np.ndarray:
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        if image:
            _, count, rows, cols = struct.unpack(">IIII", f.read(16))
            data = np.frombuffer(f.read(), dtype=np.uint8).reshape(count, 1, rows, cols)
            return data.astype(np.float32) / 255
        struct.unpack(">II", f.read(8))
        return np.frombuffer(f.read(), dtype=np.int8)


def get_mnist() -> dict:
    """MNIST as ``{'train_data', 'train_label', 'test_data', 'test_label'}`` numpy arrays.

    Images are float32 ``(N, 1, 28, 28)`` in [0, 1]; labels int8. Reads the four idx
    files (``.gz`` or not) from the working directory or ``data/``.

    Raises:
        FileNotFoundError: the files are not there (says where to put them).
    """
    found = _find(_MNIST, (".", "data"))
    if found is None:
        raise FileNotFoundError(
            _NOT_BUNDLED.format(
                what="MNIST", files=", ".join(n + "[.gz]" for n in _MNIST), where="./ or data/"
            )
        )
    return {
        "train_data": _read_idx(found[_MNIST[0]], True),
        "train_label": _read_idx(found[_MNIST[1]], False),
        "test_data": _read_idx(found[_MNIST[2]], True),
        "test_label": _read_idx(found[_MNIST[3]], False),
    }


def get_mnist_ubyte() -> None:
    """Check that the uncompressed MNIST idx files are in ``data/`` (MXNet extracts them there).

    Raises:
        FileNotFoundError: a file is missing (says which and where to put it).
    """
    missing = [n for n in _MNIST if not os.path.exists(os.path.join("data", n))]
    if missing:
        raise FileNotFoundError(
            _NOT_BUNDLED.format(what="MNIST (ubyte)", files=", ".join(missing), where="data/")
        )


def get_bz2_data(data_dir: str, data_name: str, url: str, data_origin_name: str) -> None:
    """Make ``data_dir/data_name`` from ``data_dir/data_origin_name`` (bz2), as MXNet's
    helper, but never download: one of the two files must be there already.

    Raises:
        FileNotFoundError: neither file is there (says what to fetch and where).
    """
    target = os.path.join(data_dir, data_name)
    if os.path.exists(target):
        return
    origin = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(origin):
        raise FileNotFoundError(
            f"{target} is not there and mxmod never downloads: fetch {url} and save it "
            f"as {origin} (or its decompressed content as {target})"
        )
    with bz2.BZ2File(origin, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)


def get_cifar10() -> None:
    """Check that CIFAR-10's ``train/test.rec`` and ``.lst`` files are in ``data/cifar/``.

    Raises:
        FileNotFoundError: a file is missing (says which and where to put it).
    """
    names = ["train.rec", "test.rec", "train.lst", "test.lst"]
    missing = [n for n in names if not os.path.exists(os.path.join("data", "cifar", n))]
    if missing:
        raise FileNotFoundError(
            _NOT_BUNDLED.format(what="CIFAR-10", files=", ".join(missing), where="data/cifar/")
        )


def download(
    url: str,
    fname: str | None = None,
    dirname: str | None = None,
    overwrite: bool = False,
    retries: int = 5,
) -> str:
    """Return the local path MXNet's ``download`` would have written; never downloads.

    The path is ``fname`` (or the URL's last part) inside ``dirname``, as in MXNet.

    Raises:
        FileNotFoundError: the file is not there (says where to put it).
        NotImplementedError: ``overwrite=True`` (that would need a download).
    """
    if fname is None:
        fname = url.split("/")[-1]
        if not fname:
            raise ValueError(f"cannot derive a file name from the URL {url!r}: pass fname=")
    if dirname is not None:
        fname = os.path.join(dirname, fname)
    if overwrite:
        raise NotImplementedError(
            "download(overwrite=True): mxmod never downloads; put a fresh "
            f"copy of {url} at {fname} yourself"
        )
    if not os.path.exists(fname):
        raise FileNotFoundError(
            f"{fname} is not there and mxmod never downloads: fetch {url} and save it as {fname}"
        )
    return fname


def get_mnist_iterator(
    batch_size: int, input_shape: tuple, num_parts: int = 1, part_index: int = 0
) -> tuple:
    """``(train, val)`` MNIST iterators, as MXNet's helper (which uses ``MNISTIter``).

    Built on :func:`get_mnist` and ``NDArrayIter``: images flattened to 784 unless
    ``input_shape`` has 3 dimensions, training data shuffled, both split into
    ``num_parts`` parts of which ``part_index`` is used.

    Raises:
        FileNotFoundError: the MNIST files are missing (see :func:`get_mnist`).
        ValueError: ``part_index`` is not in ``range(num_parts)``.
    """
    if not 0 <= part_index < num_parts:
        raise ValueError(f"part_index must be in range(num_parts={num_parts}), got {part_index}")
    mnist = get_mnist()
    flat = len(input_shape) != 3

    def part(x):
        size = len(x) // num_parts
        return x[part_index * size : (part_index + 1) * size]

    def images(x):
        return part(x.reshape(len(x), -1) if flat else x)

    train = NDArrayIter(
        images(mnist["train_data"]),
        part(mnist["train_label"]).astype("float32"),
        batch_size,
        shuffle=True,
    )
    val = NDArrayIter(
        images(mnist["test_data"]), part(mnist["test_label"]).astype("float32"), batch_size
    )
    return train, val


def get_mnist_pkl() -> None:
    """Check that ``data/mnist.pkl.gz`` is there (MXNet's helper downloads it).

    Raises:
        FileNotFoundError: it is not (says where to put it).
    """
    if not os.path.exists(os.path.join("data", "mnist.pkl.gz")):
        raise FileNotFoundError(
            _NOT_BUNDLED.format(what="MNIST (pickle)", files="mnist.pkl.gz", where="data/")
        )


def get_zip_data(data_dir: str, url: str, data_origin_name: str) -> None:
    """Extract ``data_dir/data_origin_name`` into ``data_dir`` when that zip file is not
    there yet, as MXNet's helper, but never download: when it is missing it must be
    downloaded by hand (nothing is done when it is there: MXNet extracts only what it
    downloaded)."""
    origin = os.path.join(data_dir, data_origin_name)
    if os.path.exists(origin):
        return
    raise FileNotFoundError(
        f"{origin} is not there and mxmod never downloads: fetch {url}, save it as {origin} "
        f"and extract it into {data_dir}"
    )


def download_model(model_name: str, dst_dir: str = "./", meta_info: dict | None = None) -> tuple:
    """``(dst_dir/model_name, 0)`` when ``model_name-symbol.json`` and
    ``model_name-0000.params`` are in ``dst_dir`` (MXNet's helper downloads them from
    data.mxnet.io); ``(None, 0)`` for a name ``meta_info`` does not list.

    Raises:
        FileNotFoundError: a file is missing (says which to fetch).
    """
    if meta_info is not None and model_name not in meta_info:
        return None, 0
    prefix = os.path.join(dst_dir, model_name)
    urls = dict((meta_info or {}).get(model_name, {}))
    for suffix, kind in (("-symbol.json", "symbol"), ("-0000.params", "params")):
        url = urls.get(kind, f"the {kind} file of {model_name} (data.mxnet.io/models)")
        download(url, fname=prefix + suffix)
    return prefix, 0


def get_im2rec_path(home_env: str = "MXNET_HOME") -> str:
    """Path of the im2rec tool: ``$MXNET_HOME/tools/im2rec.py`` when that exists, else
    mxmod's own (``python <path> ...`` runs it)."""
    home = os.environ.get(home_env)
    if home:
        path = os.path.join(home, "tools", "im2rec.py")
        if os.path.isfile(path):
            return path
    return importlib.util.find_spec("mxmod.tools.im2rec").origin  # the module, not imported
