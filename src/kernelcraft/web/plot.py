"""The run page's pictures, drawn here as SVG (no plotting library, no JavaScript): the candidate
DAG as a nested tree and the best-so-far speedup against the candidates evaluated."""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup, escape


@dataclass
class Node:
    id: int
    agent: str
    strategy: str
    status: str
    speedup: float | None
    promoted: bool
    children: list[Node] = field(default_factory=list)


def dag_tree(cands, promoted_id: int | None) -> list[Node]:
    nodes = {c.id: Node(c.id, c.agent, c.strategy, c.status, c.speedup_vs_baseline, c.id == promoted_id) for c in cands}
    roots = []
    for c in cands:
        parent = nodes.get(c.parent_id) if c.parent_id is not None else None
        (parent.children if parent else roots).append(nodes[c.id])
    return roots


def best_so_far_svg(cands, width: int = 640, height: int = 240) -> Markup:
    """Each evaluated candidate's speedup over the baseline (dots: green passed, red not), the best
    passing one so far (the step line) and the baseline (1.0, dashed)."""
    pts = [(i, c) for i, c in enumerate(c for c in cands if c.agent != "baseline" and c.status != "PENDING")]
    if not pts:
        return Markup('<p class="muted">No candidate evaluated yet.</p>')
    ys = [c.speedup_vs_baseline for _, c in pts if c.speedup_vs_baseline]
    top = max([1.0, *ys]) * 1.15
    left, right, bottom, up = 48, 12, 30, 12
    w, h = width - left - right, height - up - bottom
    n = max(len(pts) - 1, 1)

    def x(i: float) -> float:
        return left + w * i / n if len(pts) > 1 else left + w / 2

    def y(v: float) -> float:
        return up + h * (1 - v / top)

    out = [f'<svg class="plot" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="best speedup so far over {len(pts)} candidates" xmlns="http://www.w3.org/2000/svg">',
           f'<rect x="{left}" y="{up}" width="{w}" height="{h}" fill="#fbfbfd" stroke="#d0d4dc"/>']
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        v = top * frac
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11" fill="#555">{v:.2f}</text>')
    out.append(f'<line x1="{left}" x2="{left + w}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" stroke="#888" '
               'stroke-dasharray="5 4"/>')
    out.append(f'<text x="{left + w - 4}" y="{y(1.0) - 5:.1f}" text-anchor="end" font-size="11" fill="#666">baseline</text>')
    best, steps = None, []
    for i, c in pts:
        if c.status == "PASSED" and c.speedup_vs_baseline and (best is None or c.speedup_vs_baseline > best):
            best = c.speedup_vs_baseline
        if best is not None:
            steps.append((x(i), y(best)))
    if steps:
        path = " ".join(f"{'M' if k == 0 else 'H'}{px:.1f}" + (f" {py:.1f}" if k == 0 else f" V{py:.1f}")
                        for k, (px, py) in enumerate(steps))
        out.append(f'<path d="{path}" fill="none" stroke="#2b6cb0" stroke-width="2"/>')
    for i, c in pts:
        v = c.speedup_vs_baseline or 0.0
        color = "#2f855a" if c.status == "PASSED" else "#c53030"
        label = escape(f"candidate {c.id}: {c.status} {v:.3f}x {c.strategy[:60]}")
        out.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="4" fill="{color}"><title>{label}</title></circle>')
    out.append(f'<text x="{left + w / 2}" y="{height - 8}" text-anchor="middle" font-size="11" fill="#555">'
               'candidates, in evaluation order</text>')
    out.append("</svg>")
    return Markup("".join(out))
