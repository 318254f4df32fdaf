#!/usr/bin/python3
"""Benchmark receiver inside `xterm -u8 -e`: puts the tty in raw mode and reports every line
(terminated by the CR that Return produces) as one JSON line to the FIFO named on the command
line, so the benchmark can read back exactly what xterm delivered.
usage: tty_reader.py FIFO
"""
import json
import os
import sys
import tty

tty.setraw(0)
out = open(sys.argv[1], "w", encoding="utf-8")
out.write(json.dumps({"ready": True}) + "\n")
out.flush()
buf = b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    buf += chunk
    while b"\r" in buf:
        line, _, buf = buf.partition(b"\r")
        out.write(json.dumps({"value": line.decode("utf-8", "replace")}) + "\n")
        out.flush()
