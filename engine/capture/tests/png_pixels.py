#!/usr/bin/python3
"""Independent PNG check with Pillow: prints one JSON line per file with the chunk types, the
decoded mode and size, and the SHA-256 of the decoded RGB pixels (row-major, 3 bytes/pixel)."""
import hashlib
import json
import struct
import sys

from PIL import Image


def chunk_types(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "bad signature"
    types, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        types.append(data[pos + 4:pos + 8].decode("ascii"))
        pos += 12 + length
    return types


for path in sys.argv[1:]:
    with open(path, "rb") as f:
        data = f.read()
    im = Image.open(path)
    im.load()
    out = {
        "mode": im.mode,
        "width": im.width,
        "height": im.height,
        "chunks": sorted(set(chunk_types(data))),
        "pixels_sha256": hashlib.sha256(im.tobytes()).hexdigest(),
    }
    print(json.dumps(out, sort_keys=True))
