#!/usr/bin/python3
"""Benchmark receiver: a Tk window with one Entry that has keyboard focus.

Return reports the Entry's exact content as one JSON line on stdout and clears it, so the
benchmark can read back what a typing tool really delivered (X events are processed in order,
so everything typed before the Return is in the value).
usage: tk_entry.py TITLE X Y [FIFO]   (JSON lines go to FIFO instead of stdout when given)
"""
import json
import sys
import tkinter as tk

title, x, y = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = open(sys.argv[4], "w", encoding="utf-8") if len(sys.argv) > 4 else sys.stdout
root = tk.Tk()
root.title(title)
root.geometry("900x80+%d+%d" % (x, y))
entry = tk.Entry(root, font=("DejaVu Sans Mono", 12), insertofftime=0)
entry.pack(fill="x", padx=8, pady=8)


def report(_event):
    out.write(json.dumps({"value": entry.get()}) + "\n")
    out.flush()
    entry.delete(0, "end")
    return "break"


entry.bind("<Return>", report)


def announce_when_mapped():
    # Visibility may already have been processed, so poll the mapped state from the event loop.
    if not root.winfo_viewable():
        root.after(5, announce_when_mapped)
        return
    entry.focus_force()
    root.update_idletasks()
    out.write(json.dumps({"ready": True, "window": root.winfo_id()}) + "\n")
    out.flush()


root.after(0, announce_when_mapped)
root.mainloop()
