// The console's script (docs/console.md), inlined by the page with Fossil's nonce
// (FOSSIL_NONCE: Fossil's CSP is script-src 'self' 'nonce-…'). It keeps "In
// work" current without a reload: every few seconds it asks the page for
// that section again (?part=work) and each open output for its last lines
// (?output=RECORD, JSON, set as text, never as HTML). It changes nothing.
(() => {
  "use strict";
  const console_ = document.getElementById("ocx-console");
  const work = document.getElementById("ocx-work");
  if (!console_ || !work) return;
  const base = console_.dataset.base;
  const every = Number(console_.dataset.every || "3000");
  const stamp = document.getElementById("ocx-refreshed");

  document.querySelectorAll("select[data-autosubmit]").forEach((select) =>
    select.addEventListener("change", () => select.form.submit()));

  const get = async (query) => {
    const answer = await fetch(base + query, { credentials: "same-origin", cache: "no-store" });
    if (!answer.ok) throw new Error(`${query}: ${answer.status}`);
    return answer;
  };

  const outputs = () => [...work.querySelectorAll("details.ocx-output[data-record]")];

  const showOutput = async (details) => {
    const pre = details.querySelector("pre");
    try {
      const found = await (await get("?output=" + encodeURIComponent(details.dataset.record))).json();
      pre.textContent = found.why ? found.why : (found.lines.join("\n") || "(nothing printed yet)");
      pre.scrollTop = pre.scrollHeight;
    } catch (error) {
      pre.textContent = "could not read its output: " + error.message;
    }
  };

  const refresh = async () => {
    const opened = new Map(outputs().map((d) => [d.dataset.record, [d.open, d.querySelector("pre").textContent]]));
    const html = await (await get("?part=work")).text();
    work.innerHTML = html;
    for (const details of outputs()) {
      const before = opened.get(details.dataset.record);
      if (before) [details.open, details.querySelector("pre").textContent] = before;
    }
    await Promise.all(outputs().filter((d) => d.open).map(showOutput));
    if (stamp) stamp.textContent = "updated " + new Date().toLocaleTimeString();
  };

  work.addEventListener("toggle", (event) => {
    if (event.target.matches("details.ocx-output") && event.target.open) showOutput(event.target);
  }, true);

  const tick = async () => {
    if (!document.hidden) {
      try { await refresh(); } catch (error) { if (stamp) stamp.textContent = "not updated: " + error.message; }
    }
    setTimeout(tick, every);
  };
  outputs().filter((d) => d.open).forEach(showOutput);
  setTimeout(tick, every);
})();
