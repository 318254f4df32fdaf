#!/usr/bin/python3
"""Independent PNG probe (Pillow + hashlib, nothing from evident): decodes PATH and prints one JSON
line {"mode","width","height","sha256" (of the file bytes),"pixels":[[r,g,b],...]} with the RGB
value at each X,Y given after the path, or {"error": "..."} when the file does not decode.
Usage: png_probe.py PATH [X Y]..."""
import hashlib
import json
import sys

from PIL import Image

path = sys.argv[1]
coords = [int(v) for v in sys.argv[2:]]
try:
    with open(path, "rb") as f:
        data = f.read()
    im = Image.open(path)
    im.load()
    rgb = im.convert("RGB")
    pixels = [list(rgb.getpixel((coords[i], coords[i + 1]))) for i in range(0, len(coords) - 1, 2)]
    print(json.dumps({"mode": im.mode, "width": im.width, "height": im.height,
                      "sha256": hashlib.sha256(data).hexdigest(), "pixels": pixels}))
except Exception as e:  # reported to the test as data, not a crash
    print(json.dumps({"error": repr(e)}))
