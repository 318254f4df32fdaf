#!/usr/bin/python3
"""A tiny Tk form used by scenarios/test_tk_form.py: Name and City fields and a Submit button.

On Submit it shows "Submitted" on a green status bar and writes the submitted values as one JSON
object to --out (atomically: a temp file renamed into place) and to stdout. The layout is fixed
pixels (``place``), so a test can click at known coordinates on a display without a window manager.

    /usr/bin/python3 tk_form.py --out /tmp/submitted.json
"""
import argparse
import json
import os
import sys
import tkinter as tk

WIDTH, HEIGHT = 480, 240
# Geometry shared with the scenario (x, y, width, height), window coordinates.
NAME_ENTRY = (120, 20, 320, 32)
CITY_ENTRY = (120, 70, 320, 32)
SUBMIT_BUTTON = (120, 130, 120, 36)
STATUS_BAR = (20, 190, 440, 36)
BACKGROUND = "#404040"
SUBMITTED_GREEN = "#1E8E3E"
ENTRY_WHITE = "#FFFFFF"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, help="where to write the submitted JSON")
    args = parser.parse_args()

    root = tk.Tk(className="EvidentTkForm")
    # Input methods make Tk decode keys with Xutf8LookupString, i.e. text beyond Latin-1.
    try:
        root.tk.call("tk", "useinputmethods", "1")
    except tk.TclError:
        pass
    root.title("Evident Tk form")
    root.geometry(f"{WIDTH}x{HEIGHT}+0+0")
    root.resizable(False, False)
    root.configure(background=BACKGROUND)

    def place(widget, box):
        x, y, w, h = box
        widget.place(x=x, y=y, width=w, height=h)

    tk.Label(root, text="Name", bg=BACKGROUND, fg="white").place(x=20, y=20, height=32)
    tk.Label(root, text="City", bg=BACKGROUND, fg="white").place(x=20, y=70, height=32)
    name = tk.Entry(root, font=("DejaVu Sans", 12), bg=ENTRY_WHITE)
    city = tk.Entry(root, font=("DejaVu Sans", 12), bg=ENTRY_WHITE)
    place(name, NAME_ENTRY)
    place(city, CITY_ENTRY)
    status = tk.Label(root, text="", bg=BACKGROUND, fg="white", font=("DejaVu Sans", 12, "bold"))
    place(status, STATUS_BAR)

    def submit():
        values = {"name": name.get(), "city": city.get()}
        status.configure(text="Submitted", bg=SUBMITTED_GREEN)
        # The screen says "Submitted" before the file appears: update_idletasks runs the redraw
        # (its X requests sit in Xlib's buffer), and winfo_pointerxy is a round trip (XQueryPointer),
        # so the server has drawn them by the time it answers.
        root.update_idletasks()
        root.winfo_pointerxy()
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(values, f, ensure_ascii=False)
        os.replace(tmp, args.out)
        print(json.dumps(values, ensure_ascii=False), flush=True)

    button = tk.Button(root, text="Submit", command=submit)
    place(button, SUBMIT_BUTTON)
    root.mainloop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
