#!/usr/bin/python3
# plot_mem.py - operator memory against Pods for rayop and KubeRay, as an SVG (no
# plotting library needed). Input: a JSON file with
#   {"memory_benchmark": [{"op", "exp", "points": [[pods, MiB], ...]}, ...],   (bench/peer_mem.py)
#    "perf": [{"pods": N, "rayop_mem_mib": x, "kuberay_mem_mib": y}, ...]}   (bench/peer.sh runs)
# Left panel: KubeRay's three memory-benchmark experiments (0-150 Pods, linear); right
# panel: peak memory of the perf-shape runs (log Pods axis).
#   python3 bench/plot_mem.py docs/bench-memory.json docs/bench-memory.svg [docs/bench-memory.png]
# The PNG needs cairosvg, which is not on the system: install it into a venv outside the tree
# (python3 -m venv ~/.cache/plot-venv && ~/.cache/plot-venv/bin/pip install cairosvg) and run
# this script with that venv's python.
import json
import math
import sys

W, H, PAD = 900, 380, 55
COL = {"rayop": "#1f77b4", "kuberay": "#d62728"}
DASH = {"exp1": "", "exp2": "6,3", "exp3": "2,3"}


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;")


class Panel:
    def __init__(self, x0, w, xs, ys, logx, title, xlabel):
        self.x0, self.w, self.logx, self.out = x0, w, logx, []
        self.xmin, self.xmax = xs
        self.ymin, self.ymax = ys
        self.top, self.h = 40, H - 40 - PAD
        self.text(x0 + w / 2, 25, title, anchor="middle", size=14)
        self.text(x0 + w / 2, H - 12, xlabel, anchor="middle")

    def fx(self, x):
        if self.logx:
            x = math.log10(max(x, self.xmin))
            lo, hi = math.log10(self.xmin), math.log10(self.xmax)
        else:
            lo, hi = self.xmin, self.xmax
        return self.x0 + (x - lo) / (hi - lo) * self.w

    def fy(self, y):
        return self.top + self.h - (y - self.ymin) / (self.ymax - self.ymin) * self.h

    def text(self, x, y, s, anchor="start", size=11, color="#222"):
        self.out.append('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" fill="%s">%s</text>'
                        % (x, y, size, anchor, color, esc(s)))

    def axes(self, xticks, yticks):
        b = self.top + self.h
        self.out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>'
                        % (self.x0, self.top, self.w, self.h))
        for t in xticks:
            x = self.fx(t)
            self.out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>' % (x, self.top, x, b))
            self.text(x, b + 15, t, anchor="middle")
        for t in yticks:
            y = self.fy(t)
            self.out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>'
                            % (self.x0, y, self.x0 + self.w, y))
            self.text(self.x0 - 6, y + 4, t, anchor="end")

    def line(self, pts, color, dash="", label=None):
        if not pts:
            return
        d = " ".join("%.1f,%.1f" % (self.fx(x), self.fy(y)) for x, y in pts)
        self.out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>'
                        % (d, color, ' stroke-dasharray="%s"' % dash if dash else ""))
        for x, y in pts:
            self.out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>' % (self.fx(x), self.fy(y), color))
        if label:
            x, y = pts[-1]
            self.text(self.fx(x) + 4, self.fy(y) - 4, label, size=10, color=color)


def nice(hi):
    for step in (5, 10, 20, 25, 50, 100, 200, 500):
        if hi / step <= 8:
            return step
    return 1000


def main():
    data = json.load(open(sys.argv[1]))
    mb = data.get("memory_benchmark", [])
    perf = sorted(data.get("perf", []), key=lambda p: p["pods"])
    y1 = max([y for r in mb for _, y in r["points"]] + [10]) * 1.1
    s1 = nice(y1)
    left = Panel(PAD, 360, (0, 150), (0, math.ceil(y1 / s1) * s1), False,
                 "KubeRay's memory benchmark (PSS, MiB)", "Pods")
    left.axes(range(0, 151, 25), range(0, int(math.ceil(y1 / s1) * s1) + 1, s1))
    for r in mb:
        left.line(r["points"], COL[r["op"]], DASH.get(r["exp"], ""),
                  "%s %s" % ("rayop" if r["op"] == "rayop" else "KubeRay", r["exp"]))
    y2 = max([p.get(k) or 0 for p in perf for k in ("rayop_mem_mib", "kuberay_mem_mib")] + [10]) * 1.1
    s2 = nice(y2)
    xmax = max([p["pods"] for p in perf] + [1000]) * 1.5
    right = Panel(PAD * 2 + 360 + 20, W - (PAD * 3 + 360 + 20), (100, xmax), (0, math.ceil(y2 / s2) * s2),
                  True, "perf shape: peak PSS (MiB) at N Pods", "Pods (log)")
    right.axes([t for t in (100, 400, 1000, 4000, 10000, 40000) if t <= xmax],
               range(0, int(math.ceil(y2 / s2) * s2) + 1, s2))
    for op, k in (("rayop", "rayop_mem_mib"), ("kuberay", "kuberay_mem_mib")):
        right.line([(p["pods"], p[k]) for p in perf if p.get(k)], COL[op], "",
                   "rayop" if op == "rayop" else "KubeRay")
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>'] + left.out + right.out + ['</svg>']
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(svg) + "\n")
    if len(sys.argv) > 3:
        try:
            import cairosvg
        except ImportError:
            print("plot_mem.py: the PNG needs cairosvg (see the top of this file)", file=sys.stderr)
            return 2
        cairosvg.svg2png(url=sys.argv[2], write_to=sys.argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
