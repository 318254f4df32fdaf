#!/usr/bin/python3
"""Test client: a Tk Entry (or Text with --text) that prints its content as a JSON line after
every change, and {"ready":...} once mapped and focused. Used to read back what XTest typing
delivered. Mode `clicks`: a 400x200 Frame at root (700,100) (clear of the fixture app at (0,0))
bound to <Button-1>, <Double-Button-1> and <Triple-Button-1>; Tk fires the most specific binding
per press, so it prints {"click":1|2|3,"x","y" (root),"time"} with Tk's own multi-click count.
Usage: tk_client.py TITLE [entry|text|clicks]"""
import json
import sys
import tkinter as tk

title = sys.argv[1] if len(sys.argv) > 1 else "evident-tk"
mode = sys.argv[2] if len(sys.argv) > 2 else "entry"
root = tk.Tk()
try:
    root.tk.call("tk", "useinputmethods", "1")  # Xutf8LookupString: text beyond Latin-1
except tk.TclError:
    pass
root.title(title)
root.geometry("+0+0")


def emit(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=True) + "\n")
    sys.stdout.flush()


if mode == "text":
    w = tk.Text(root, width=60, height=8, font=("fixed", 12))

    def on_modified(_e):
        if w.edit_modified():
            emit({"value": w.get("1.0", "end-1c")})
            w.edit_modified(False)

    w.bind("<<Modified>>", on_modified)

    def on_release(_e):
        def report():
            try:
                sel = w.get("sel.first", "sel.last")
            except tk.TclError:
                sel = ""
            emit({"selection": sel})
        root.after_idle(report)

    w.bind("<ButtonRelease-1>", on_release, add="+")
elif mode == "clicks":
    root.geometry("+700+100")
    w = tk.Frame(root, width=400, height=200, background="#305070")

    def clicked(count):
        return lambda e: emit({"click": count, "x": e.x_root, "y": e.y_root, "time": e.time})

    w.bind("<Button-1>", clicked(1))
    w.bind("<Double-Button-1>", clicked(2))
    w.bind("<Triple-Button-1>", clicked(3))
else:
    var = tk.StringVar()
    w = tk.Entry(root, textvariable=var, width=60)
    var.trace_add("write", lambda *_a: emit({"value": var.get()}))

    def on_return(_e):  # Return submits: report the whole value once, then clear for the next
        emit({"submitted": var.get()})
        var.set("")

    w.bind("<Return>", on_return)
w.pack()


def ready():
    w.focus_force()
    root.update_idletasks()
    emit({"ready": True, "x": w.winfo_rootx(), "y": w.winfo_rooty(),
          "width": w.winfo_width(), "height": w.winfo_height()})


state = {"ready": False}


def on_expose(_e):
    if not state["ready"]:
        state["ready"] = True
        ready()


w.bind("<Expose>", on_expose, add="+")
root.mainloop()
