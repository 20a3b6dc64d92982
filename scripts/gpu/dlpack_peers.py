#!/usr/bin/env python3
"""DLPack and stream adoption with real peers (issue 37), run by gpu-check on a lent GPU.

PyTorch and CuPy tensors go to Vantage through DLPack (libvantage_dlpack_peer.so, built from
tests/gpu/dlpack_peer.cpp and loaded with ctypes), Vantage launches its saxpy on their memory, and a
tensor Vantage allocates comes back to each framework. For each framework present:
  inplace   y = 2x + y written by Vantage into the framework's own tensors, read back by it;
  returned  a tensor Vantage allocates (3x), taken by the framework's from_dlpack, freed by it;
  stream    the framework's own stream adopted: a sleep, a fill of y, Vantage's saxpy, a copy of y,
            all enqueued with no wait; right only if Vantage's launch is ordered between them;
  refused   float64, host memory, a strided view and a length mismatch, each refused with a message
            that names the tensor.
One JSON line per check; exit 1 if any check failed, 0 otherwise (a framework that does not import is
reported and skipped; if none imports, exit 2).

usage: dlpack_peers.py LIB [--n N]
"""
import argparse
import ctypes
import json
import sys

CAPSULE = b"dltensor"

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Returned:
    """A DLPack producer around a capsule Vantage made: what from_dlpack of either framework takes."""

    def __init__(self, pointer):
        self.capsule = _new_capsule(pointer, CAPSULE, None)

    def __dlpack__(self, stream=None, **_):
        return self.capsule

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, GPU 0


def load(path):
    lib = ctypes.CDLL(path)
    lib.vantage_peer_saxpy.restype = ctypes.c_int
    lib.vantage_peer_saxpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p,
                                       ctypes.c_char_p, ctypes.c_int]
    lib.vantage_peer_scaled.restype = ctypes.c_void_p
    lib.vantage_peer_scaled.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_char_p, ctypes.c_int]
    return lib


class Peer:
    """One framework's tensors, capsules and streams, as the checks below need them."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch
            if not torch.cuda.is_available():
                raise RuntimeError("torch sees no GPU")
            self.m = torch
        else:
            import cupy
            self.m = cupy

    def arange(self, n, dtype="float32"):
        if self.name == "torch":
            return self.m.arange(n, dtype=getattr(self.m, dtype), device="cuda")
        return self.m.arange(n, dtype=dtype)

    def full(self, n, value):
        if self.name == "torch":
            return self.m.full((n,), value, dtype=self.m.float32, device="cuda")
        return self.m.full((n,), value, dtype="float32")

    def fill(self, t, value):
        if self.name == "torch":
            t.fill_(value)
        else:
            t.fill(value)

    def host(self, n):
        if self.name == "torch":
            return self.m.arange(n, dtype=self.m.float32)
        return None  # CuPy has no host tensors

    def capsule(self, t):
        c = t.__dlpack__()
        return c, _get_pointer(c, CAPSULE)

    def from_dlpack(self, producer):
        return self.m.from_dlpack(producer)

    def synchronize(self):
        if self.name == "torch":
            self.m.cuda.synchronize()
        else:
            self.m.cuda.Device().synchronize()

    def stream(self):
        if self.name == "torch":
            s = self.m.cuda.Stream()
            return s, s.cuda_stream, self.m.cuda.stream(s)
        s = self.m.cuda.Stream(non_blocking=True)
        return s, s.ptr, s

    def sleep(self, cycles):
        if self.name == "torch":
            self.m.cuda._sleep(cycles)
        else:  # a kernel that spins for `cycles` clocks
            k = self.m.RawKernel(r'''extern "C" __global__ void spin(long long c) {
                long long t = clock64(); while (clock64() - t < c) {} }''', "spin")
            k((1,), (1,), (self.m.int64(cycles),))

    def equal(self, a, b):
        return bool((a == b).all().item())


def saxpy(lib, x, y, a, stream=None):
    err = ctypes.create_string_buffer(1024)
    rc = lib.vantage_peer_saxpy(x, y, a, stream, err, len(err))
    return rc, err.value.decode()


def run_checks(lib, peer, n):
    results = []

    def check(name, ok, **detail):
        results.append(dict(peer=peer.name, check=name, ok=bool(ok), **detail))

    # inplace: Vantage writes y = 2x + y into the framework's memory.
    x, y = peer.arange(n), peer.full(n, 1.0)
    peer.synchronize()
    (cx, px), (cy, py) = peer.capsule(x), peer.capsule(y)
    rc, err = saxpy(lib, px, py, 2.0)
    check("inplace", rc == 0 and peer.equal(y, 2 * x + 1), error=err)
    del cx, cy

    # returned: a tensor Vantage allocates, taken by the framework and freed by it.
    cx, px = peer.capsule(x)
    err = ctypes.create_string_buffer(1024)
    out = lib.vantage_peer_scaled(px, 3.0, err, len(err))
    if out:
        z = peer.from_dlpack(Returned(out))
        check("returned", peer.equal(z, 3 * x) and tuple(z.shape) == (n,), shape=list(z.shape))
        del z
    else:
        check("returned", False, error=err.value.decode())
    del cx

    # stream: sleep, fill, Vantage's saxpy, copy, all on the framework's stream, no wait in between.
    s, handle, ctx = peer.stream()
    y2 = peer.full(n, 0.0)
    peer.synchronize()
    with ctx:
        peer.sleep(50_000_000)  # tens of milliseconds: a launch not ordered after the fill runs first
        peer.fill(y2, 5.0)
        (cx, px), (cy, py) = peer.capsule(x), peer.capsule(y2)
        rc, err = saxpy(lib, px, py, 2.0, handle)
        copy = y2.copy() if peer.name == "cupy" else y2.clone()  # enqueued after Vantage's launch
    s.synchronize()
    check("stream", rc == 0 and peer.equal(copy, 2 * x + 5), error=err)
    del cx, cy

    # refused: each names the tensor.
    cases = [("float64", peer.arange(n, "float64"), y, "x"),
             ("strided", x[::2], y[::2], "x"),
             ("length", x[: n // 2], y, "x")]
    host = peer.host(n)
    if host is not None:
        cases.append(("host memory", host, y, "x"))
    for what, a, b, named in cases:
        peer.synchronize()
        (ca, pa), (cb, pb) = peer.capsule(a), peer.capsule(b)
        rc, err = saxpy(lib, pa, pb, 1.0)
        check("refused " + what, rc == 1 and named in err, error=err)
        del ca, cb
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lib", help="path of libvantage_dlpack_peer.so")
    ap.add_argument("--n", type=int, default=1 << 20, help="elements per tensor (default 2^20)")
    args = ap.parse_args()
    lib = load(args.lib)
    failed, ran = False, 0
    for name in ("torch", "cupy"):
        try:
            peer = Peer(name)
        except Exception as e:  # noqa: BLE001 - report why a framework is missing, go on
            print(json.dumps(dict(peer=name, check="import", ok=None, error=str(e))))
            continue
        ran += 1
        try:
            results = run_checks(lib, peer, args.n)
        except Exception as e:  # noqa: BLE001
            results = [dict(peer=name, check="ran", ok=False, error=repr(e))]
        for r in results:
            print(json.dumps(r))
            failed |= not r["ok"]
    sys.exit(2 if ran == 0 else 1 if failed else 0)


if __name__ == "__main__":
    main()
