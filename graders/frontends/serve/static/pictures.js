// The practice room's pictures of a failing check: heatmaps and entry-by-entry diffs
// (used by app.js's renderVerdict, loaded before it; T and esc are app.js's).
"use strict";
// A failing matrix check's expected and actual matrices side by side, one colour scale
// for both: -inf dark, the smallest finite value light, the largest deep blue; captioned
// with what the matrix is (the tensor checked, and which slice of it).
function heatmaps(p) {
  const finite = [...p.expected.flat(), ...p.got.flat()].filter((v) => typeof v === "number");
  const low = Math.min(...finite, 0), high = Math.max(...finite, 0);
  const cell = (v) => {
    if (typeof v === "string") return `<td class="inf" title="${esc(v)}">${v === "-inf" ? "−∞" : esc(v)}</td>`;
    const t = high > low ? (v - low) / (high - low) : 0;
    const light = Math.round(97 - 55 * t);
    return `<td style="background:hsl(215,70%,${light}%)" title="${v.toPrecision(4)}"></td>`;
  };
  const grid = (title, m) => `<figure><figcaption>${esc(title)}</figcaption>` +
    `<table class="heatmap">${m.map((row) => "<tr>" + row.map(cell).join("") + "</tr>").join("")}</table></figure>`;
  return `<div class="heatmaps"><p class="heatmap-what">${esc(p.caption || "")}</p>` +
    `<div class="heatmap-pair">${grid(T.expected, p.expected)}${grid(T.yours, p.got)}</div></div>`;
}

// Expected against got, entry by entry (token ids, a short vector, ranked hypotheses, an
// integer): the entries that differ marked, a missing entry shown as a dash; a Copy button
// copies both lines as text. Long entries (hypotheses) are listed one per row.
function sequenceDiff(p) {
  const n = Math.max(p.expected.length, p.got.length);
  const entry = (list, i, side) => i < list.length
    ? `<td class="${side}${p.differs[i] ? " off" : ""}">${esc(list[i])}</td>`
    : `<td class="${side} missing off">—</td>`;
  const indices = Array.from({length: n}, (_, i) => i);
  let table;
  if ([...p.expected, ...p.got].some((s) => s.length > 14)) {
    table = `<tr><th>#</th><th>${esc(T.expected)}</th><th>${esc(T.yours)}</th></tr>` +
      indices.map((i) => `<tr><th>${i}</th>${entry(p.expected, i, "expected")}${entry(p.got, i, "got")}</tr>`).join("");
  } else {
    table = `<tr><th>${esc(T.expected)}</th>${indices.map((i) => entry(p.expected, i, "expected")).join("")}</tr>` +
      `<tr><th>${esc(T.yours)}</th>${indices.map((i) => entry(p.got, i, "got")).join("")}</tr>`;
  }
  const text = `${T.expected}: [${p.expected.join(", ")}]\n${T.yours}: [${p.got.join(", ")}]`;
  return `<div class="diff"><p class="heatmap-what">${esc(p.caption || "")}</p>` +
    `<div class="diff-scroll"><table>${table}</table></div>` +
    `<button class="copy" data-copy="${esc(text)}">${esc(T.copy)}</button></div>`;
}

async function copyText(button) {
  const text = button.dataset.copy;
  try { await navigator.clipboard.writeText(text); } catch (e) {  // no clipboard API: select and copy
    const area = document.createElement("textarea");
    area.value = text; document.body.appendChild(area); area.select();
    document.execCommand("copy"); area.remove();
  }
  button.textContent = T.copied;
}
