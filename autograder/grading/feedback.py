"""Feedback HTML for one graded notebook: the student's cells, the check messages, the points.

Rendered from the autograded notebook the grader built, whose test cells hold only their docstring
and the check's feedback: hidden test code never reaches this page (it never existed in the
notebook). Deliberately small and fast (no nbconvert): one page per notebook, plain HTML.
"""

from __future__ import annotations

import html

try:  # nbconvert's markdown renderer; plain text when it is missing
    import mistune

    _markdown = mistune.create_markdown(escape=True)
except Exception:  # noqa: BLE001
    _markdown = None

STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;white-space:pre-wrap}
.cell{border-left:3px solid #ddd;margin:1rem 0;padding-left:.8rem}
.test{border-left-color:#4a7bd0}.answer{border-left-color:#3a9a5b}.manual{border-left-color:#c58b1c}
.out{background:#fff;border:1px solid #eee}.err{color:#a01818}
.score{font-weight:bold}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .6rem}
"""


def _md(text: str) -> str:
    if _markdown is None:
        return f"<pre>{html.escape(text)}</pre>"
    return _markdown(text)


def _fmt(value) -> str:
    return "pending" if value is None else f"{value:g}"


def render(nb, task: dict, rows: list, notes: list) -> str:
    """The feedback page for ``nb`` (an autograded notebook node)."""
    total = sum(r["score"] for r in rows if r["score"] is not None)
    available = sum(r["max_score"] for r in rows)
    pending = any(r["score"] is None for r in rows)
    title = html.escape(f"{task['assignment']} / {task['stem']} — {task['student']}")
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>",
             f"<style>{STYLE}</style></head><body><h1>{title}</h1>",
             f"<p class='score'>Score: {total:g} / {available:g}"
             + (" (written answers still to be graded)" if pending else "") + "</p>",
             "<table><tr><th>cell</th><th>score</th><th>status</th></tr>"]
    for row in rows:
        parts.append(f"<tr><td>{html.escape(row['grade_id'])}</td><td>{_fmt(row['score'])} / "
                     f"{row['max_score']:g}</td><td>{html.escape(row['status'])}</td></tr>")
    parts.append("</table>")
    if notes:
        parts.append("<h2>Notes on your submission</h2><ul>")
        parts += [f"<li>{html.escape(note)}</li>" for note in notes]
        parts.append("</ul>")
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {}) if isinstance(cell.metadata.get("nbgrader"), dict) else {}
        if cell.cell_type == "markdown":
            css = "manual" if meta.get("solution") else "md"
            parts.append(f"<div class='cell {css}'>{_md(cell.source)}</div>")
            continue
        css = "test" if meta.get("grade") and not meta.get("solution") else (
            "answer" if meta.get("solution") else "code")
        parts.append(f"<div class='cell {css}'><pre>{html.escape(cell.source)}</pre>")
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind == "stream":
                klass = "out err" if output.get("name") == "stderr" else "out"
                parts.append(f"<pre class='{klass}'>{html.escape(output.get('text', ''))}</pre>")
            elif kind == "execute_result":
                text = output.get("data", {}).get("text/plain", "")
                label = "points" if css == "test" else "Out"
                parts.append(f"<pre class='out'>{label}: {html.escape(str(text))}</pre>")
            elif kind == "error":
                trace = "\n".join(output.get("traceback", []))
                parts.append(f"<pre class='out err'>{html.escape(trace)}</pre>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
