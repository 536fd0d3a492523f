#!/usr/bin/env python3
"""I/O load for the progress tests: reads or writes a file at a fixed rate.

  ioload.py read PATH BPS        read() 64 KiB chunks; at EOF keep the file open
  ioload.py pread PATH BPS       os.pread() only: the file position never moves
  ioload.py write PATH BPS       O_WRONLY|O_CREAT|O_TRUNC, append zeros
  ioload.py overwrite PATH BPS   O_WRONLY into the existing (preallocated) file
  ioload.py reuse A B BPS        read A for 2 s, close it, open B (same fd number)
"""
import os
import sys
import time

CHUNK = 64 * 1024


def paced(bps, step):
    """Call step() so that CHUNK bytes go by every CHUNK/bps seconds."""
    start = time.monotonic()
    n = 0
    while True:
        step()
        n += 1
        delay = start + n * CHUNK / bps - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def main():
    mode = sys.argv[1]
    if mode in ("read", "pread"):
        path, bps = sys.argv[2], float(sys.argv[3])
        fd = os.open(path, os.O_RDONLY)
        size = os.fstat(fd).st_size
        off = [0]

        def read():
            if not os.read(fd, CHUNK):
                time.sleep(0.05)

        def pread():
            os.pread(fd, CHUNK, off[0])
            off[0] = (off[0] + CHUNK) % max(size, CHUNK)

        paced(bps, read if mode == "read" else pread)
    elif mode in ("write", "overwrite"):
        path, bps = sys.argv[2], float(sys.argv[3])
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if mode == "write" else 0)
        fd = os.open(path, flags, 0o600)
        buf = bytes(CHUNK)
        paced(bps, lambda: os.write(fd, buf))
    elif mode == "reuse":
        a, b, bps = sys.argv[2], sys.argv[3], float(sys.argv[4])
        fd = [os.open(a, os.O_RDONLY)]
        t0 = time.monotonic()
        first = fd[0]

        def step():
            if len(fd) == 1 and time.monotonic() - t0 > 2.0:
                os.close(fd[0])
                fd[0] = os.open(b, os.O_RDONLY)
                assert fd[0] == first
                fd.append(None)  # switched
                return
            if not os.read(fd[0], CHUNK):
                time.sleep(0.05)

        paced(bps, step)
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
