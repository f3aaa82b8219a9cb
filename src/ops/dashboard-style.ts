/** The dashboard's one stylesheet, admitted by its hash (docs/management.md#dashboard). */
export const STYLE = `
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #dde2ea; --bg: #f5f7fa; --ok: #1f8a4c; --bad: #c0392b; --warn: #b8860b; --accent: #2f5fd0; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 12px 24px; padding: 14px 24px; background: #1d2330; color: #fff; }
header h1 { margin: 0; font-size: 20px; letter-spacing: .5px; }
header .service { color: #aab4c8; font-weight: 400; }
.facts { display: flex; flex-wrap: wrap; gap: 8px 20px; margin: 0; }
.facts div { display: flex; gap: 6px; } .facts dt { color: #aab4c8; } .facts dd { margin: 0; font-weight: 600; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; background: #556; color: #fff; }
.badge.master, .badge.ok { background: var(--ok); } .badge.slave { background: #6b7385; }
.badge.stopping, .badge.unhealthy, .badge.bad { background: var(--bad); } .badge.warn { background: var(--warn); }
main { padding: 8px 24px 32px; }
section { margin-top: 18px; } h2 { font-size: 16px; margin: 0 0 8px; } h3 { font-size: 14px; margin: 14px 0 6px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #eef1f6; color: var(--muted); font-weight: 600; font-size: 12px; text-transform: uppercase; letter-spacing: .4px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.selected td { background: #eaf0ff; }
button.link { border: 0; padding: 0; background: none; color: var(--accent); font: inherit; cursor: pointer; text-decoration: underline; }
button.action { padding: 2px 10px; border: 1px solid var(--line); border-radius: 4px; background: #fff; color: var(--ink); font: inherit; font-size: 12px; cursor: pointer; }
button.action.danger { color: var(--bad); border-color: #e6b8b2; }
button.action:disabled { color: #aab; cursor: not-allowed; }
.ids { display: flex; flex-wrap: wrap; gap: 4px; } .id { padding: 0 6px; border-radius: 4px; background: #eef1f6; font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.id-cell { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.mode { color: var(--muted); font-size: 12px; }
.empty, .note { color: var(--muted); margin: 8px 0 0; }
.error { color: var(--bad); font-weight: 600; }
form { display: flex; gap: 8px; align-items: center; } input { padding: 4px 8px; font: inherit; }
.chart { background: #fff; border: 1px solid var(--line); padding: 8px 10px 4px; }
.chart svg { display: block; width: 100%; height: 170px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 0; padding: 0; list-style: none; font-size: 12px; color: var(--muted); }
.legend li::before { content: ""; display: inline-block; width: 10px; height: 3px; margin-right: 6px; vertical-align: middle; background: currentColor; }
.legend .received { color: #2f5fd0; } .legend .delivered { color: #1f8a4c; } .legend .acked { color: #8e44ad; } .legend .requeued { color: #d35400; }
.legend span { color: var(--muted); }
.body { margin: 0; font-family: ui-monospace, monospace; font-size: 12px; white-space: pre-wrap; word-break: break-all; max-width: 480px; }
#confirm { position: sticky; top: 0; z-index: 2; margin: 12px 0 0; padding: 10px 14px; display: flex; flex-wrap: wrap; gap: 10px; align-items: center; background: #fff4e5; border: 1px solid #f0c27b; border-radius: 6px; }
#confirm[hidden] { display: none; }
#confirm p { margin: 0; flex: 1 1 300px; word-break: break-all; }
.own-set { font-weight: 600; }
.dlq-pick { display: flex; gap: 8px; flex-wrap: wrap; margin-bottom: 8px; }
.dlq-pick button[aria-pressed="true"] { background: #eaf0ff; border-color: var(--accent); }
`;
