"""The console's stylesheet: layout and the few colours that carry meaning.

Text, links and backgrounds stay the skin's (Fossil's skins are light and
dark): lines and tracks are translucent grey over whatever is behind them,
and the coloured marks (outcomes, bars, verdicts) are white on a colour of
their own, readable on either. Wide pages put runs and cards side by side;
narrow ones (a phone, 400 px) stack them and give each bar the full width.
"""

CSS = """
.ocx-console{--ocx-line:rgba(128,128,128,.35);--ocx-track:rgba(128,128,128,.2);--ocx-good:#2e7d32;
 --ocx-calm:#546e7a;--ocx-warn:#b45f06;--ocx-bad:#c62828;--ocx-lost:#6a1b9a;--ocx-ask:#1565c0;line-height:1.4}
.ocx-console h2{margin:1.2em 0 .4em;padding-bottom:.15em;border-bottom:1px solid var(--ocx-line)}
.ocx-console h2 .ocx-count,.ocx-node .ocx-count{font-size:.7em;font-weight:normal;opacity:.75;margin-left:.4em}
.ocx-strip{margin:.2em 0 .6em;opacity:.9}
.ocx-preview{margin:.2em 0 .6em;padding:.4em .6em;border:2px solid #b36b00;background:#fff4e0;color:#222}
.ocx-nav{display:flex;flex-wrap:wrap;gap:.3em 1em;margin:.3em 0 .8em}
.ocx-nav a{white-space:nowrap}
.ocx-small,.ocx-help,.ocx-since{font-size:.85em;opacity:.8}
.ocx-empty{opacity:.7;font-style:italic}
.ocx-word,.ocx-state,.ocx-verdict{display:inline-block;padding:.05em .55em;border-radius:1em;font-size:.85em;
 font-weight:600;color:#fff;background:var(--ocx-calm);white-space:nowrap;vertical-align:baseline}
.ocx-good{background:var(--ocx-good)}.ocx-calm{background:var(--ocx-calm)}.ocx-warn{background:var(--ocx-warn)}
.ocx-bad{background:var(--ocx-bad)}.ocx-lost{background:var(--ocx-lost)}.ocx-ask{background:var(--ocx-ask)}
.ocx-idle{background:transparent;color:inherit;border:1px solid var(--ocx-line);font-weight:normal}
.ocx-bad-text{color:var(--ocx-bad)}
.ocx-needs-list{list-style:none;padding:0;margin:.3em 0}
.ocx-need{padding:.35em 0;border-bottom:1px dashed var(--ocx-line)}
.ocx-note{opacity:.85}
.ocx-when,.ocx-by{opacity:.7;font-size:.9em}
.ocx-act{font-size:.9em;margin-left:.4em}
.ocx-runs{display:grid;grid-template-columns:repeat(auto-fill,minmax(30em,1fr));gap:.8em}
.ocx-run,.ocx-card{border:1px solid var(--ocx-line);border-radius:.5em;padding:.6em .8em;min-width:0}
.ocx-run-head{display:flex;flex-wrap:wrap;gap:.2em .5em;align-items:baseline}
.ocx-runner{font-weight:600}
.ocx-objective{margin:.35em 0;overflow-wrap:anywhere}
.ocx-bars{display:grid;grid-template-columns:auto 1fr auto;grid-auto-flow:row dense;gap:.35em .6em;
 align-items:center;margin:.4em 0}
.ocx-bar-row{display:contents}
.ocx-bar-label{font-size:.9em;opacity:.85}
.ocx-bar{position:relative;display:block;height:.75em;border-radius:.4em;background:var(--ocx-track);overflow:hidden}
.ocx-fill{position:absolute;left:0;top:0;bottom:0;border-radius:.4em}
.ocx-fill.ocx-ok{background:var(--ocx-good)}.ocx-fill.ocx-high{background:#d39e00}.ocx-fill.ocx-full{background:var(--ocx-bad)}
.ocx-peak{position:absolute;top:0;bottom:0;width:2px;margin-left:-1px;background:currentColor;opacity:.75}
.ocx-bar-figure{font-size:.85em;font-variant-numeric:tabular-nums;white-space:nowrap}
.ocx-deliveries{margin:.3em 0;font-size:.9em}
.ocx-output summary{cursor:pointer;font-size:.9em}
.ocx-tail{max-height:18em;overflow:auto;margin:.3em 0 0;padding:.4em;font-size:.8em;border:1px solid var(--ocx-line);
 border-radius:.3em;white-space:pre-wrap;overflow-wrap:anywhere}
.ocx-done{border-collapse:collapse;width:100%}
.ocx-done th,.ocx-done td{text-align:left;vertical-align:top;padding:.35em .5em;border-bottom:1px solid var(--ocx-line)}
.ocx-done .ocx-what{overflow-wrap:anywhere}
.ocx-num{white-space:nowrap;font-variant-numeric:tabular-nums}
.ocx-branch-picker{margin:.3em 0 .6em}
.ocx-queue{list-style:none;padding:0;margin:0}
.ocx-checkin{display:grid;grid-template-columns:minmax(10em,auto) auto 1fr auto;gap:.2em .6em;align-items:baseline;
 padding:.3em 0;border-bottom:1px dashed var(--ocx-line);overflow-wrap:anywhere}
.ocx-marks{display:inline-flex;flex-wrap:wrap;gap:.25em;margin-right:.3em}
.ocx-verdict.ocx-pass{background:var(--ocx-good)}.ocx-verdict.ocx-fail{background:var(--ocx-bad)}
.ocx-verdict.ocx-none{background:transparent;color:inherit;border:1px dashed var(--ocx-line);font-weight:normal}
.ocx-verdict .ocx-by{opacity:.9;font-weight:normal;font-size:.9em}
.ocx-cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(24em,1fr));gap:.8em;align-items:start}
.ocx-wide{grid-column:1/-1}
.ocx-wide .ocx-form{display:grid;grid-template-columns:repeat(auto-fill,minmax(19em,1fr));gap:0 1.4em;align-items:start}
.ocx-wide .ocx-object{grid-row:span 3}
.ocx-wide .ocx-legend,.ocx-wide .ocx-buttons{grid-column:1/-1}
.ocx-card h3{margin:0 0 .2em;display:flex;flex-wrap:wrap;gap:.4em;align-items:baseline}
.ocx-needs{font-size:.7em;font-weight:normal;padding:.05em .5em;border-radius:1em;border:1px solid var(--ocx-line)}
.ocx-held{border-color:var(--ocx-good)}.ocx-missing{border-style:dashed;opacity:.75}
.ocx-summary{margin:.2em 0 .5em}
.ocx-field{margin:.45em 0}
.ocx-field label,.ocx-object legend{display:block;font-weight:600}
.ocx-field input,.ocx-field textarea,.ocx-field select{box-sizing:border-box;width:100%;max-width:100%;font:inherit}
.ocx-amount{display:flex;gap:.3em}.ocx-amount input{flex:1 1 6em}.ocx-amount select{flex:0 0 auto;width:auto}
.ocx-help{display:block;margin-top:.1em}
.ocx-check{display:block;white-space:normal;overflow-wrap:anywhere;margin:.3em 0}
.ocx-default{font-family:monospace;overflow-wrap:anywhere}
.ocx-object{border:1px solid var(--ocx-line);border-radius:.4em;margin:.5em 0;padding:.2em .6em .4em}
.ocx-required{color:var(--ocx-bad);text-decoration:none;font-weight:700}
.ocx-legend{font-size:.8em;opacity:.8;margin:.3em 0}
.ocx-buttons{display:flex;gap:.5em;margin-top:.5em}
.ocx-primary{font-weight:600}
.ocx-answer-view{margin-top:.6em;padding-top:.4em;border-top:1px solid var(--ocx-line)}
.ocx-outcome-line{margin:.2em 0;font-weight:600}
.ocx-outcome-line.ocx-good{background:none;color:var(--ocx-good)}.ocx-outcome-line.ocx-bad{background:none;color:var(--ocx-bad)}
.ocx-steps{list-style:none;padding:0;margin:.3em 0;font-size:.9em}
.ocx-step{padding:.1em 0;overflow-wrap:anywhere}
.ocx-mark{display:inline-block;width:1.2em;text-align:center}
.ocx-step-stopped{color:var(--ocx-bad)}.ocx-step-wrote .ocx-mark,.ocx-step-checked .ocx-mark{color:var(--ocx-good)}
.ocx-kind{opacity:.75}.ocx-step-field{font-family:monospace}
.ocx-result dl{display:grid;grid-template-columns:auto 1fr;gap:.1em .6em;margin:.3em 0}
.ocx-result dt{opacity:.8}.ocx-result dd{margin:0;overflow-wrap:anywhere}
.ocx-json summary{cursor:pointer;font-size:.85em;opacity:.8}
.ocx-json pre{max-height:20em;overflow:auto;font-size:.8em}
@media (max-width:600px){
 .ocx-runs,.ocx-cards{grid-template-columns:1fr}
 .ocx-bars{grid-template-columns:1fr auto;row-gap:.15em}
 .ocx-bar{grid-column:1/-1;margin-bottom:.3em}.ocx-bar-figure{white-space:normal;text-align:right}
 .ocx-checkin{grid-template-columns:auto 1fr}.ocx-checkin .ocx-marks{grid-column:1/-1}
 .ocx-done thead{display:none}
 .ocx-done tr{display:grid;grid-template-columns:auto 1fr auto;border-bottom:1px solid var(--ocx-line)}
 .ocx-done td{border:0;padding:.25em .3em}.ocx-done .ocx-what{grid-column:1/-1;order:3}
}
"""
