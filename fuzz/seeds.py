#!/usr/bin/env python3
"""Writes the seed inputs of fuzz/corpus/npy_fuzz and fuzz/corpus/npz_fuzz (run once; the
files are checked in, and scripts/fuzz grows the corpus from them): small valid .npy and .npz
files of every dtype halua reads, both byte orders, C and Fortran order, 0-d and empty shapes,
format versions 1.0 to 3.0, headers written otherwise than numpy.save writes them, dtypes
halua refuses; archives stored and deflated, with zip64 extra fields and zip64 end records, with
a comment, empty. Needs NumPy (Debian's python3-numpy): /usr/bin/python3 fuzz/seeds.py"""
import io
import os
import struct
import sys
import zipfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def npy_bytes(a, version=None):
    f = io.BytesIO()
    if version is None:
        np.save(f, a)
    else:
        np.lib.format.write_array(f, a, version=version)
    return f.getvalue()


def raw_npy(header, data=b"", version=(1, 0)):
    """A .npy file with this header text as it is (no padding rules applied)."""
    h = header.encode("latin1")
    ln = struct.pack("<H", len(h)) if version[0] == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes(version) + ln + h + data


def npy_seeds():
    rng = np.random.default_rng(0)
    s = {}
    for t in ["<f4", "<f8", "<f2", "<i4", "<i8", "|u1", "|i1", "|b1", ">f4", ">f8", ">i4", ">i8", ">f2"]:
        a = (rng.standard_normal((2, 3)) * 50).astype(t)
        s["c-%s" % t[1:] + ("-be" if t[0] == ">" else "")] = npy_bytes(a)
    s["f4-fortran"] = npy_bytes(np.asfortranarray(np.arange(12, dtype="<f4").reshape(3, 4)))
    s["i8-fortran-3d"] = npy_bytes(np.asfortranarray(np.arange(24, dtype="<i8").reshape(2, 3, 4)))
    s["f8-fortran-be"] = npy_bytes(np.asfortranarray(np.arange(6, dtype=">f8").reshape(2, 3)))
    s["f4-0d"] = npy_bytes(np.float32(3.5))
    s["f4-empty"] = npy_bytes(np.zeros((0,), "<f4"))
    s["i4-empty-3d"] = npy_bytes(np.zeros((2, 0, 3), "<i4"))
    s["f4-8d"] = npy_bytes(np.ones((1, 2, 1, 2, 1, 1, 2, 1), "<f4"))
    s["b1-special"] = npy_bytes(np.array([True, False, True]))
    s["f4-special"] = npy_bytes(np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], "<f4"))
    s["f4-v2"] = npy_bytes(np.arange(4, dtype="<f4"), version=(2, 0))
    s["f4-v3"] = npy_bytes(np.arange(4, dtype="<f4"), version=(3, 0))
    # written by hand: other spacing and key orders, Python 2's long extents, trailing bytes
    d = np.arange(6, dtype="<f4").tobytes()
    s["hand-order"] = raw_npy("{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}\n", d)
    s["hand-spaces"] = raw_npy("{ 'descr' : '<f4' ,'fortran_order':True,'shape':(3L,2L,),}   \n", d)
    s["hand-dquote"] = raw_npy('{"descr": "<f4", "fortran_order": False, "shape": (6,)}\n', d + b"tail")
    # refused: structured and unicode dtypes, 9 dimensions, a truncated body, a zip's magic
    s["refused-struct"] = npy_bytes(np.zeros(2, dtype=[("a", "<f4"), ("b", "<i8")]))
    s["refused-unicode"] = npy_bytes(np.array(["ab", "c"]))
    s["refused-9d"] = raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }\n", d[:4])
    s["refused-truncated"] = npy_bytes(np.arange(8, dtype="<f8"))[:-5]
    return s


class Member:
    def __init__(self, name, data, method=0):
        self.name = name.encode()
        self.data = data
        self.method = method


def zip_bytes(members, zip64_extra=False, zip64_end=False, comment=b""):
    """A zip archive written by hand, for the layouts zipfile does not write for small files:
    every size and offset in zip64 extra fields, zip64 end of central directory records."""
    out = io.BytesIO()
    central = []
    for m in members:
        crc = zlib.crc32(m.data) & 0xFFFFFFFF
        if m.method == 8:
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            body = c.compress(m.data) + c.flush()
        else:
            body = m.data
        offset = out.tell()
        extra = struct.pack("<HHQQ", 1, 16, len(m.data), len(body)) if zip64_extra else b""
        sizes = (0xFFFFFFFF, 0xFFFFFFFF) if zip64_extra else (len(body), len(m.data))
        out.write(struct.pack("<IHHHHHIII HH".replace(" ", ""), 0x04034B50, 45 if zip64_extra else 20, 0, m.method, 0, 0x21,
                              crc, sizes[0], sizes[1], len(m.name), len(extra)))
        out.write(m.name + extra + body)
        central.append((m, crc, len(body), offset))
    cd_start = out.tell()
    for m, crc, csize, offset in central:
        if zip64_extra:
            extra = struct.pack("<HHQQQ", 1, 24, len(m.data), csize, offset)
            fields = (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
        else:
            extra = b""
            fields = (csize, len(m.data), offset)
        out.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45 if zip64_extra else 20, 0, m.method, 0, 0x21, crc,
                              fields[0], fields[1], len(m.name), len(extra), 0, 0, 0, 0o600 << 16, fields[2]))
        out.write(m.name + extra)
    cd_size = out.tell() - cd_start
    n = len(members)
    if zip64_end:
        eocd64 = out.tell()
        out.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, cd_size, cd_start))
        out.write(struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1))
        out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, len(comment)))
    else:
        out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, cd_size, cd_start, len(comment)))
    out.write(comment)
    return out.getvalue()


def npz_seeds():
    s = {}
    f4 = npy_bytes(np.arange(6, dtype="<f4").reshape(2, 3))
    i8 = npy_bytes(np.arange(4, dtype=">i8"))
    b1 = npy_bytes(np.array([[True], [False]]))
    ff = npy_bytes(np.asfortranarray(np.arange(6, dtype="<f8").reshape(3, 2)))
    for name, fn in [("savez", np.savez), ("savez-compressed", np.savez_compressed)]:
        f = io.BytesIO()
        fn(f, w=np.arange(6, dtype=np.float32).reshape(2, 3), b=np.zeros(3, np.int32), flag=np.array(True),
           h=np.array([1.5, -2], np.float16))
        s[name] = f.getvalue()
    f = io.BytesIO()
    np.savez(f)
    s["savez-empty"] = f.getvalue()
    s["stored"] = zip_bytes([Member("a.npy", f4), Member("b.npy", i8)])
    s["deflated"] = zip_bytes([Member("a.npy", f4, 8), Member("f.npy", ff, 8), Member("c.npy", b1)])
    s["zip64-extra"] = zip_bytes([Member("a.npy", f4), Member("b.npy", b1, 8)], zip64_extra=True)
    s["zip64-end"] = zip_bytes([Member("a.npy", f4), Member("b.npy", i8, 8)], zip64_end=True)
    s["zip64-both"] = zip_bytes([Member("x.npy", ff)], zip64_extra=True, zip64_end=True)
    s["comment"] = zip_bytes([Member("a.npy", i8)], comment=b"a comment after the end record")
    s["zipfile"] = zipfile_bytes()
    # refused: a member that is no .npy, one name twice, a member damaged
    s["refused-not-npy"] = zip_bytes([Member("a.npy", f4), Member("readme.txt", b"hello")])
    s["refused-twice"] = zip_bytes([Member("a.npy", f4), Member("a.npy", i8)])
    bad = bytearray(zip_bytes([Member("a.npy", f4, 8)]))
    bad[60] ^= 0xFF
    s["refused-damaged"] = bytes(bad)
    return s


def zipfile_bytes():
    """Python's zipfile with its own choices (data descriptors when writing a stream)."""
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("s.npy", "w", force_zip64=True) as m:
            m.write(npy_bytes(np.arange(5, dtype=np.int32)))
        z.writestr("t.npy", npy_bytes(np.eye(2, dtype=np.uint8)))
    return f.getvalue()


def write(target, seeds):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(data)
    print("%s: %d seeds, %d bytes" % (target, len(seeds), sum(len(v) for v in seeds.values())), file=sys.stderr)


if __name__ == "__main__":
    write("npy_fuzz", npy_seeds())
    write("npz_fuzz", npz_seeds())
