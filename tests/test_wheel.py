"""What a user installs is a wheel, not this checkout: build the sdist and the wheel (from
the sdist, as ``python -m build`` does), install the wheel into a fresh virtual environment
where mxmod is not installed, and run mxmod from outside the source tree: its version
metadata, its whole op table, a Module.fit, the digits example and a smoke subset of the
tests. Offline: the build uses the setuptools this Python has (``--no-isolation``)."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import zipfile

import pytest

from isolated_python import make_python_without_mxmod, offline_env

import mxmod
from mxmod.ops import list_ops


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOKE_TESTS = ["test_newcomer.py", "test_io.py", "test_initializer.py"]  # no fixture files

# Reading a file that ships inside the package would need package-data in pyproject.toml
# (and a check below that the wheel carries it); mxmod reads none today: only its modules,
# some found at run time (pkgutil.iter_modules over mxmod/ops, checked by the op count).
PACKAGE_FILE_READS = re.compile(r"__file__|importlib\.resources|pkgutil\.get_data|pkg_resources")


def _sources():
    for folder, dirs, files in os.walk(os.path.join(ROOT, "mxmod")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            path = os.path.join(folder, name)
            yield os.path.relpath(path, ROOT).replace(os.sep, "/"), path


def _can_build_offline():
    if importlib.util.find_spec("build") is None:
        return False
    import setuptools

    newer = tuple(int(p) for p in setuptools.__version__.split(".")[:2]) >= (70, 1)
    return newer or importlib.util.find_spec("wheel") is not None


def test_mxmod_reads_no_file_of_its_own_package():
    found = [
        f"{rel}:{n}: {line.strip()}"
        for rel, path in _sources()
        if rel.endswith(".py")
        for n, line in enumerate(open(path, encoding="utf-8"), 1)
        if PACKAGE_FILE_READS.search(line)
    ]
    assert not found, (
        "mxmod now reads a file from its own package; add it to "
        "[tool.setuptools.package-data] in pyproject.toml and to test_wheel's check:\n"
        + "\n".join(found)
    )


# a build, a venv, an install and fresh interpreters: @pytest.mark.slow, run by .ci/run
@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python of a fresh venv with the built wheel installed, the wheel's path)."""
    if not _can_build_offline():
        pytest.skip("building a wheel offline needs `pip install build wheel` (the [test] extra)")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy: building writes build/ and *.egg-info into the source folder
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    shutil.copytree(os.path.join(ROOT, "mxmod"), src / "mxmod", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), src / name)
    python = make_python_without_mxmod(str(tmp))
    env = offline_env()
    dist = tmp / "dist"
    subprocess.run(
        [python, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src)],
        check=True,
        env=env,
        capture_output=True,
    )
    (wheel,) = dist.glob("mxmod-*.whl")
    assert list(dist.glob("mxmod-*.tar.gz")), "python -m build makes an sdist too"
    install = [python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)]
    subprocess.run(install, check=True, env=env)
    return python, str(wheel)


def _run(python, args, cwd, **env):
    out = subprocess.run(
        [python, *args], cwd=cwd, env=offline_env(**env), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow
def test_wheel_carries_every_module(installed):
    _, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [rel for rel, _ in _sources() if rel.endswith(".py") and rel not in names]
    assert not missing, f"the wheel lacks {missing}: is a folder missing its __init__.py?"


@pytest.mark.slow
def test_installed_wheel_imports_and_trains_outside_the_source_tree(installed, tmp_path):
    python, _ = installed
    script = """
import importlib.metadata, json, os
import numpy as np
import mxmod as mx
from mxmod.ops import list_ops

rng = np.random.RandomState(0)
x = rng.rand(200, 6).astype(np.float32)
y = (x[:, :3].sum(1) > x[:, 3:].sum(1)).astype(np.float32)
it = mx.io.NDArrayIter(x, y, batch_size=20)
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2),
                           name="softmax")
mod = mx.mod.Module(net)
mod.fit(it, num_epoch=8, optimizer_params={"learning_rate": 0.5})
it.reset()
print(json.dumps({
    "file": mx.__file__, "version": mx.__version__, "mxmod_version": mx.__mxmod_version__,
    "metadata_version": importlib.metadata.version("mxmod"),
    "ops": len(list_ops()), "acc": dict(mod.score(it, "acc"))["accuracy"]}))
"""
    got = json.loads(_run(python, ["-c", script], cwd=str(tmp_path)).strip().splitlines()[-1])
    assert "site-packages" in got["file"] and not got["file"].startswith(ROOT)
    assert got["version"] == "1.9.1"  # MXNet's version: programs compare against it
    assert got["metadata_version"] == got["mxmod_version"] == mxmod.__mxmod_version__
    assert got["ops"] == len(list_ops())  # every ops/ module found in the install
    assert got["acc"] > 0.8


@pytest.mark.slow
def test_installed_wheel_runs_the_digits_example_and_smoke_tests(installed, tmp_path):
    python, _ = installed
    example = os.path.join(ROOT, "examples", "train_digits.py")
    out = _run(python, [example, "--epochs", "5", "--out", str(tmp_path / "out")], str(tmp_path))
    assert "validation accuracy" in out and (tmp_path / "out" / "digits-0005.params").exists()
    tests = tmp_path / "tests"  # a copy: the tests' folder must not put the checkout on sys.path
    tests.mkdir()
    for name in ["conftest.py", "isolated_python.py", *SMOKE_TESTS]:
        shutil.copy(os.path.join(ROOT, "tests", name), tests / name)
    out = _run(
        python,
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-m", "not slow"]
        + [str(tests / name) for name in SMOKE_TESTS],
        str(tmp_path),
    )
    assert re.search(r"\d+ passed", out) and "failed" not in out
