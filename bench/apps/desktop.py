#!/usr/bin/python3
"""Realistic screen content for the screenshot row: a full-screen, screenshot-like image
(generated, deterministic) plus a Tk window with ordinary widgets on top of it.
Prints one JSON line {"ready":true} when both windows are mapped and drawn.
usage: desktop.py IMAGE.png WIDTH HEIGHT
"""
import json
import sys
import tkinter as tk

path, width, height = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
root = tk.Tk()
root.title("bench-desktop")
root.geometry("%dx%d+0+0" % (width, height))
photo = tk.PhotoImage(file=path)
tk.Label(root, image=photo, borderwidth=0, highlightthickness=0).place(x=0, y=0)

top = tk.Toplevel(root)
top.title("bench-widgets")
top.geometry("520x420+1340+90")
tk.Label(top, text="Preferences", font=("DejaVu Sans", 16, "bold")).pack(anchor="w", padx=12, pady=8)
frame = tk.Frame(top)
frame.pack(fill="both", expand=True, padx=12)
lb = tk.Listbox(frame, height=8, font=("DejaVu Sans", 11))
for name in ("General", "Appearance", "Keyboard", "Network", "Privacy & security",
             "Notifications", "Updates", "About this computer"):
    lb.insert("end", name)
lb.selection_set(1)
lb.pack(side="left", fill="y")
right = tk.Frame(frame)
right.pack(side="left", fill="both", expand=True, padx=10)
for label in ("Dark mode", "Show hidden files", "Reduce motion"):
    v = tk.IntVar(value=len(label) % 2)
    tk.Checkbutton(right, text=label, variable=v, font=("DejaVu Sans", 11)).pack(anchor="w")
scale = tk.Scale(right, from_=0, to=100, orient="horizontal", label="Font size")
scale.set(42)
scale.pack(fill="x")
ent = tk.Entry(right, font=("DejaVu Sans", 11), insertofftime=0)
ent.insert(0, "user@example.org")
ent.pack(fill="x", pady=4)
text = tk.Text(top, height=5, font=("DejaVu Sans Mono", 10), insertofftime=0)
text.insert("end", "Release notes\n- faster startup\n- fixed a crash when the network drops\n"
            "- translations updated (français, 日本語)\n")
text.pack(fill="x", padx=12, pady=6)
buttons = tk.Frame(top)
buttons.pack(anchor="e", padx=12, pady=6)
tk.Button(buttons, text="Cancel").pack(side="left", padx=4)
tk.Button(buttons, text="Apply", default="active").pack(side="left", padx=4)



def announce_when_mapped():
    # Visibility may already have been processed, so poll the mapped state from the event loop.
    if not (root.winfo_viewable() and top.winfo_viewable()):
        root.after(5, announce_when_mapped)
        return
    top.lift()  # no window manager: raise the widgets above the full-screen image explicitly
    root.update_idletasks()
    sys.stdout.write(json.dumps({"ready": True}) + "\n")
    sys.stdout.flush()


root.after(0, announce_when_mapped)
root.mainloop()
