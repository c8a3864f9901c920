"""The framing of a W&B `.wandb` log, for runpack's tests: read its records, write records back.

A log is a 7-byte header (":W&B", 0xBEE1 little-endian, version 0), then 32 KiB blocks of
chunks: a 7-byte chunk header (CRC-32 of the type byte and the data, length, type) and the data.
A record is a FULL chunk (1), or FIRST (2), MIDDLE (3)..., LAST (4). A chunk never starts in the
last 6 bytes of a block (zero padding).
"""
import struct
import zlib

BLOCK = 32768
HEADER = b":W&B" + struct.pack("<H", 0xBEE1) + b"\x00"


def records(path):
    """The records' bytes of the log at `path`, in order."""
    data = open(path, "rb").read()
    assert data[:4] == b":W&B", path
    pos, parts = 7, []
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0:
            break
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            yield chunk
        elif kind == 2:
            parts = [chunk]
        elif kind == 3:
            parts.append(chunk)
        else:
            yield b"".join(parts + [chunk])


def write(path, recs):
    """Writes the records' bytes `recs` as a log at `path`."""
    out = bytearray(HEADER)
    for rec in recs:
        rest, first = rec, True
        while True:
            left = BLOCK - len(out) % BLOCK
            if left < 7:
                out += b"\x00" * left
                continue
            take = min(len(rest), left - 7)
            last = take == len(rest)
            kind = {(True, True): 1, (True, False): 2, (False, False): 3, (False, True): 4}[(first, last)]
            data = rest[:take]
            crc = zlib.crc32(bytes([kind]) + data) & 0xFFFFFFFF
            out += struct.pack("<IHB", crc, len(data), kind) + data
            rest, first = rest[take:], False
            if last:
                break
    open(path, "wb").write(bytes(out))
