"""``im2rec``: make image lists (``.lst``) and RecordIO databases (``.rec`` + ``.idx``),
as MXNet's ``tools/im2rec.py`` (same options, same list order and files; MXNet reads
them). Run ``python -m mxmod.tools.im2rec --help``.

Images are read, resized and encoded with OpenCV on ``--num-thread`` threads (OpenCV
releases the GIL, so they run in parallel) and written in list order by one writer.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from .. import recordio


def list_image(root, recursive, exts):
    """Yield ``(index, relative path, label)``: label = folder number with ``recursive``
    (folders in sorted walk order), else 0."""
    i = 0
    if recursive:
        cat = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            files.sort()
            for fname in files:
                fpath = os.path.join(path, fname)
                if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                    if path not in cat:
                        cat[path] = len(cat)
                    yield (i, os.path.relpath(fpath, root), cat[path])
                    i += 1
        for k, v in sorted(cat.items(), key=lambda x: x[1]):
            print(os.path.relpath(k, root), v)
    else:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                yield (i, os.path.relpath(fpath, root), 0)
                i += 1


def write_list(path_out, image_list):
    """Write ``index\\tlabel(s)\\tpath`` lines (labels as ``%f``)."""
    with open(path_out, "w") as fout:
        for item in image_list:
            fout.write("%d\t" % item[0] + "".join("%f\t" % j for j in item[2:]) + "%s\n" % item[1])


def make_list(args):
    """Write the ``.lst`` file(s): shuffled with ``random.seed(100)`` unless
    ``--no-shuffle``, split into chunks and train/val/test as asked."""
    image_list = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.seed(100)
        random.shuffle(image_list)
    n = len(image_list)
    chunk_size = (n + args.chunks - 1) // args.chunks
    for i in range(args.chunks):
        chunk = image_list[i * chunk_size : (i + 1) * chunk_size]
        str_chunk = "_%d" % i if args.chunks > 1 else ""
        sep = int(chunk_size * args.train_ratio)
        sep_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(args.prefix + str_chunk + ".lst", chunk)
        else:
            if args.test_ratio:
                write_list(args.prefix + str_chunk + "_test.lst", chunk[:sep_test])
            if args.train_ratio + args.test_ratio < 1.0:
                write_list(args.prefix + str_chunk + "_val.lst", chunk[sep_test + sep :])
            write_list(args.prefix + str_chunk + "_train.lst", chunk[sep_test : sep_test + sep])


def read_list(path_in):
    """Yield ``[index, path, label, ...]`` from a ``.lst`` (bad lines are reported and
    skipped, as MXNet does)."""
    with open(path_in) as fin:
        for line in fin:
            parts = [i.strip() for i in line.strip().split("\t")]
            if len(parts) < 3:
                print(
                    "lst should have at least has three parts, but only has %s parts for %s"
                    % (len(parts), parts)
                )
                continue
            try:
                yield [int(parts[0])] + [parts[-1]] + [float(i) for i in parts[1:-1]]
            except ValueError as e:
                print("Parsing lst met error for %s, detail: %s" % (parts, e))


def image_encode(args, item):
    """The packed record of one list item, or None (reported) when it cannot be read."""
    import cv2

    fullpath = os.path.join(args.root, item[1])
    label = item[2:] if len(item) > 3 and args.pack_label else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    if args.pass_through:
        try:
            with open(fullpath, "rb") as fin:
                return recordio.pack(header, fin.read())
        except OSError as e:
            print("pack_img error:", item[1], e)
            return None
    img = cv2.imread(fullpath, args.color)
    if img is None:
        print("imread read blank (None) image for file: %s" % fullpath)
        return None
    if args.center_crop:
        if img.shape[0] > img.shape[1]:
            margin = (img.shape[0] - img.shape[1]) // 2
            img = img[margin : margin + img.shape[1], :]
        else:
            margin = (img.shape[1] - img.shape[0]) // 2
            img = img[:, margin : margin + img.shape[0]]
    if args.resize:
        if img.shape[0] > img.shape[1]:
            newsize = (args.resize, img.shape[0] * args.resize // img.shape[1])
        else:
            newsize = (img.shape[1] * args.resize // img.shape[0], args.resize)
        img = cv2.resize(img, newsize)
    try:
        return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding)
    except ValueError as e:
        print("pack_img error on file: %s" % fullpath, e)
        return None


def make_record(args, lst_path, working_dir):
    """Encode the images of ``lst_path`` into ``<name>.rec``/``<name>.idx`` in list order."""
    base = os.path.splitext(os.path.basename(lst_path))[0]
    record = recordio.MXIndexedRecordIO(
        os.path.join(working_dir, base + ".idx"), os.path.join(working_dir, base + ".rec"), "w"
    )
    items = list(read_list(lst_path))
    pre_time = time.time()
    with ThreadPoolExecutor(max(1, args.num_thread)) as pool:
        for count, (item, s) in enumerate(
            zip(items, pool.map(lambda it: image_encode(args, it), items))
        ):
            if s is not None:
                record.write_idx(item[0], s)
            if count % 1000 == 0:
                cur_time = time.time()
                print("time:", cur_time - pre_time, " count:", count)
                pre_time = cur_time
    record.close()


def parse_args(argv=None):
    """MXNet im2rec's command line."""
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list or make a record database by reading from an image list",
    )
    parser.add_argument("prefix", help="prefix of input/output lst and rec files.")
    parser.add_argument("root", help="path to folder containing images.")
    cgroup = parser.add_argument_group("Options for creating image lists")
    cgroup.add_argument(
        "--list",
        action="store_true",
        help="If this is set im2rec will create image list(s) by traversing "
        "root folder and output to <prefix>.lst. Otherwise im2rec will "
        "read <prefix>.lst and create a database at <prefix>.rec",
    )
    cgroup.add_argument(
        "--exts",
        nargs="+",
        default=[".jpeg", ".jpg", ".png"],
        help="list of acceptable image extensions.",
    )
    cgroup.add_argument("--chunks", type=int, default=1, help="number of chunks.")
    cgroup.add_argument(
        "--train-ratio", type=float, default=1.0, help="Ratio of images to use for training."
    )
    cgroup.add_argument(
        "--test-ratio", type=float, default=0, help="Ratio of images to use for testing."
    )
    cgroup.add_argument(
        "--recursive",
        action="store_true",
        help="If true recursively walk through subdirs and assign an unique "
        "label to images in each folder.",
    )
    cgroup.add_argument(
        "--no-shuffle",
        dest="shuffle",
        action="store_false",
        help="If this is passed, im2rec will not randomize the image order in <prefix>.lst",
    )
    rgroup = parser.add_argument_group("Options for creating database")
    rgroup.add_argument(
        "--pass-through",
        action="store_true",
        help="whether to skip transformation and save image as is",
    )
    rgroup.add_argument(
        "--resize",
        type=int,
        default=0,
        help="resize the shorter edge of image to the newsize, original "
        "images will be packed by default.",
    )
    rgroup.add_argument(
        "--center-crop",
        action="store_true",
        help="specify whether to crop the center image to make it rectangular.",
    )
    rgroup.add_argument(
        "--quality",
        type=int,
        default=95,
        help="JPEG quality for encoding, 1-100; or PNG compression for encoding, 1-9",
    )
    rgroup.add_argument(
        "--num-thread", type=int, default=1, help="number of threads to use for encoding."
    )
    rgroup.add_argument(
        "--color",
        type=int,
        default=1,
        choices=[-1, 0, 1],
        help="specify the color mode of the loaded image. 1: Loads a color "
        "image. 0: Loads image in grayscale mode. -1: Loads image as such "
        "including alpha channel.",
    )
    rgroup.add_argument(
        "--encoding",
        type=str,
        default=".jpg",
        choices=[".jpg", ".png"],
        help="specify the encoding of the images.",
    )
    rgroup.add_argument(
        "--pack-label",
        action="store_true",
        help="Whether to also pack multi dimensional label in the record file",
    )
    args = parser.parse_args(argv)
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv=None):
    """Entry point: ``--list`` makes lists, otherwise every ``<prefix>*.lst`` becomes a
    ``.rec``/``.idx`` pair.

    Returns:
        int: 0 on success, 1 when no list file matched.
    """
    args = parse_args(argv)
    if args.list:
        make_list(args)
        return 0
    working_dir = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    files = sorted(
        os.path.join(working_dir, f)
        for f in os.listdir(working_dir)
        if os.path.isfile(os.path.join(working_dir, f))
    )
    count = 0
    for fname in files:
        if fname.startswith(args.prefix) and fname.endswith(".lst"):
            print("Creating .rec file from", fname, "in", working_dir)
            count += 1
            make_record(args, fname, working_dir)
    if not count:
        print("Did not find and list file with prefix %s" % args.prefix)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
