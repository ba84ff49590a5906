"""A Python where mxmod is not installed, for the tests that install it as a user would
(a wheel, a Colab runtime's ``pip install``), offline.

The test machine's mxmod is an editable install of this checkout. A fresh virtual
environment sees the system's packages (jax, numpy, pip, setuptools, Jupyter) through
symlinks to each of them, mxmod's own entries left out; the link folder is on ``sys.path``
but is no site directory, so its ``.pth`` files (the editable install's finder) never run.
"""

import os
import site
import subprocess
import sys


def _is_mxmod(entry):
    return "mxmod" in entry.lower()


def make_python_without_mxmod(root):
    """A venv under ``root`` without mxmod; returns the path of its ``python``."""
    venv = os.path.join(root, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    links = os.path.join(root, "system-packages")
    os.makedirs(links)
    folders = site.getsitepackages()
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        folders.append(site.getusersitepackages())  # pip's fallback for a read-only system
    for folder in folders:
        for entry in os.listdir(folder):
            target = os.path.join(links, entry)
            if not _is_mxmod(entry) and not os.path.lexists(target):
                os.symlink(os.path.join(folder, entry), target)
    python = os.path.join(venv, "bin", "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with open(os.path.join(purelib, "system-packages.pth"), "w") as f:
        f.write(links + "\n")
    return python


def offline_env(**extra):
    """The environment for that Python: no PYTHONPATH, no user site, pip without network
    and building with the setuptools it already has (no isolated build environment)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(
        PYTHONNOUSERSITE="1",
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",  # pip reads "0" for a --no-* flag as: give the flag
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_WARN_SCRIPT_LOCATION="1",
    )
    env.update(extra)
    return env
