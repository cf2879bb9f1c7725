/**
 * The HTML report's own style and script. The script draws each chart from the JSON the page
 * embeds, then sets `data-ready="true"` on <html> (or `"error"` with `data-error`), so a browser
 * test or a screenshot waits for a condition instead of a delay.
 */

/**
 * Nothing may be fetched: inline scripts and styles only, images only as data: URLs, and no eval
 * (Chart.js needs none), so the page cannot reach the network even if a library tried.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

export const PAGE_STYLE = `
:root { color-scheme: light; --ink: #1d1d1f; --muted: #5f6368; --line: #d9dce1; --warn: #8a4b00; --warn-bg: #fff4e0; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 24px 32px 48px; color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 32px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 16px; margin: 20px 0 6px; }
.meta, figcaption, .muted { color: var(--muted); }
.banner { background: var(--warn-bg); color: var(--warn); border: 1px solid #f0c36d; padding: 8px 12px; border-radius: 6px; }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; }
.charts figure:first-child { grid-column: 1 / -1; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
figure h3 { margin-top: 0; }
.chart { position: relative; height: 340px; }
figcaption { font-size: 13px; margin-top: 8px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.wide { overflow-x: auto; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0; }
dt { color: var(--muted); }
dd { margin: 0; }
pre { background: #f5f6f8; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; overflow-x: auto; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
@media (max-width: 800px) { .charts { grid-template-columns: 1fr; } }
`;

export const PAGE_SCRIPT = `(function () {
  var root = document.documentElement;
  try {
    var specs = JSON.parse(document.getElementById("bench-charts").textContent);
    for (var i = 0; i < specs.length; i++) new Chart(document.getElementById(specs[i].id), specs[i].config);
    requestAnimationFrame(function () { root.setAttribute("data-ready", "true"); });
  } catch (e) {
    root.setAttribute("data-error", String((e && e.message) || e));
    root.setAttribute("data-ready", "error");
  }
})();`;
