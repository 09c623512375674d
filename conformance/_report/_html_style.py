"""The inline stylesheet of ``report.html`` (kept apart so the renderer stays readable).

No external fonts or assets: the file must open offline, from a CI artifact, years later.
Colours follow ``prefers-color-scheme``; the page prints on paper without backgrounds.
"""

CSS = """
:root { --fg:#1f2328; --muted:#59636e; --bg:#fff; --panel:#f6f8fa; --line:#d1d9e0;
  --ok:#1a7f37; --ok-bg:#dafbe1; --bad:#cf222e; --bad-bg:#ffebe9; --warn:#9a6700;
  --warn-bg:#fff8c5; --info-bg:#ddf4ff; }
@media (prefers-color-scheme: dark) {
  :root { --fg:#e6edf3; --muted:#9198a1; --bg:#0d1117; --panel:#151b23; --line:#3d444d;
    --ok:#3fb950; --ok-bg:#12261e; --bad:#f85149; --bad-bg:#2d1214; --warn:#d29922;
    --warn-bg:#272115; --info-bg:#121d2f; }
}
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg);
  font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; }
main { max-width:1100px; margin:0 auto; padding:24px 20px 64px; }
h1 { font-size:1.5rem; margin:0 0 4px; }
h2 { font-size:1.2rem; margin:32px 0 10px; padding-bottom:4px;
  border-bottom:1px solid var(--line); }
h3 { font-size:1rem; margin:0 0 6px; }
code, pre { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:.86rem; }
pre { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:10px 12px;
  overflow:auto; max-height:420px; white-space:pre-wrap; word-break:break-word; margin:6px 0; }
.verdict { border-radius:8px; padding:14px 18px; margin:12px 0 8px; font-size:1.35rem;
  font-weight:700; border:1px solid; }
.verdict.ok { color:var(--ok); background:var(--ok-bg); border-color:var(--ok); }
.verdict.bad { color:var(--bad); background:var(--bad-bg); border-color:var(--bad); }
.verdict small { display:block; font-size:.95rem; font-weight:500; color:var(--fg); }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:2px 16px; margin:8px 0; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; }
table { border-collapse:collapse; width:100%; margin:6px 0; }
th, td { border:1px solid var(--line); padding:5px 9px; text-align:left; vertical-align:top; }
th { background:var(--panel); font-weight:600; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td.zero { color:var(--muted); opacity:.55; }
.badge { display:inline-block; border-radius:10px; padding:0 8px; font-size:.8rem; font-weight:600;
  white-space:nowrap; }
.b-passed, .b-reached { color:var(--ok); background:var(--ok-bg); }
.b-failed, .b-error, .b-not-reached { color:var(--bad); background:var(--bad-bg); }
.b-not_run { color:var(--warn); background:var(--warn-bg); }
.b-not_claimed, .b-not-selected { color:var(--muted); background:var(--panel); }
td.hot-failed, td.hot-error { color:var(--bad); font-weight:700; }
td.hot-not_run { color:var(--warn); font-weight:700; }
ul.reasons { margin:0; padding-left:18px; }
.failure { border:1px solid var(--line); border-left:4px solid var(--bad); border-radius:6px;
  padding:12px 14px; margin:12px 0; }
.meta { color:var(--muted); font-size:.88rem; margin-bottom:6px; }
.diff { display:grid; grid-template-columns:1fr 1fr; gap:10px; }
.diff h4 { margin:4px 0 0; font-size:.85rem; color:var(--muted); }
@media (max-width:700px) { .diff { grid-template-columns:1fr; } }
details > summary { cursor:pointer; color:var(--muted); margin:4px 0; }
.harness { border:1px solid var(--bad); background:var(--bad-bg); border-radius:6px;
  padding:8px 14px; }
footer { margin-top:40px; color:var(--muted); font-size:.85rem; }
@media print { pre { max-height:none; } details > *:not(summary) { display:block; } }
"""
