"""python -m mxmod.tools.im2rec makes the same .lst, .rec and .idx bytes as MXNet 1.9.1's
tools/im2rec.py (tests/fixtures/data/im2rec, made by gen_data_fixtures.py from the
committed source images)."""

import os
import shutil
import subprocess
import sys

import pytest

from mxmod.tools import im2rec

DATA = os.path.join(os.path.dirname(__file__), "fixtures", "data")
ROOT = os.path.join(DATA, "img")
REC = os.path.join(DATA, "im2rec")


def _same(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def test_list_and_records_match_mxnet(tmp_path, capsys):
    prefix = str(tmp_path / "imgs")
    assert im2rec.main(["--list", "--recursive", prefix, ROOT]) == 0
    assert "cat 0" in capsys.readouterr().out
    assert _same(prefix + ".lst", os.path.join(REC, "imgs.lst"))
    assert (
        im2rec.main([prefix, ROOT, "--resize", "24", "--quality", "90", "--num-thread", "2"]) == 0
    )
    # re-encoded JPEGs: identical bytes when OpenCV's encoder is the same libjpeg-turbo
    for ext in ("idx", "rec"):
        assert _same(f"{prefix}.{ext}", os.path.join(REC, f"imgs.{ext}")), ext
    shutil.copy(os.path.join(REC, "imgs.lst"), tmp_path / "pass.lst")
    assert im2rec.main([str(tmp_path / "pass"), ROOT, "--pass-through"]) == 0
    for ext in ("idx", "rec"):
        assert _same(str(tmp_path / f"pass.{ext}"), os.path.join(REC, f"pass.{ext}"))
    shutil.copy(os.path.join(REC, "multi.lst"), tmp_path / "multi.lst")
    assert (
        im2rec.main(
            [
                str(tmp_path / "multi"),
                ROOT,
                "--pack-label",
                "--encoding",
                ".png",
                "--resize",
                "20",
                "--quality",
                "9",
            ]
        )
        == 0
    )
    for ext in ("idx", "rec"):
        assert _same(str(tmp_path / f"multi.{ext}"), os.path.join(REC, f"multi.{ext}"))


def test_train_val_split_and_missing_list(tmp_path, capsys):
    prefix = str(tmp_path / "split")
    assert (
        im2rec.main(
            ["--list", "--recursive", "--train-ratio", "0.75", "--no-shuffle", prefix, ROOT]
        )
        == 0
    )
    with open(prefix + "_train.lst") as f:
        train = f.read().splitlines()
    with open(prefix + "_val.lst") as f:
        val = f.read().splitlines()
    assert len(train) == 9 and len(val) == 3 and train[0].startswith("0\t0.000000\tcat/")
    assert im2rec.main([str(tmp_path / "nothing"), ROOT]) == 1
    assert "Did not find and list file" in capsys.readouterr().out


@pytest.mark.skipif(sys.platform == "win32", reason="module entry point on POSIX")
def test_module_entry_point(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "mxmod.tools.im2rec", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for opt in (
        "--list",
        "--recursive",
        "--resize",
        "--quality",
        "--encoding",
        "--pack-label",
        "--num-thread",
        "--pass-through",
    ):
        assert opt in out
