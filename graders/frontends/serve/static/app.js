// The practice room's page: talks to the kata serve API (graders/frontends/serve/server.py).
"use strict";
const token = new URLSearchParams(location.search).get("token") || sessionStorage.getItem("kata-token") || "";
if (token) { sessionStorage.setItem("kata-token", token); history.replaceState(null, "", location.pathname + location.hash); }  // the token leaves the address bar and history
let lang = localStorage.getItem("kata-lang") || "en";
let T = {};            // the page's words, in the learner's language (from /api/home)
let view = null;       // the CodeMirror view
let current = null;    // the open kata: {id, sha (of the file as the editor last saw it)}
let dirty = false;     // the editor holds text not yet saved
let mock = null;       // the running mock, from the server
let mockClockOffset = 0;
const $ = (id) => document.getElementById(id);
// One of the page's templates (T.labeled, T.check_line) filled in, every value escaped.
const fill = (template, values) => template.replace(/\{(\w+)\}/g, (whole, name) => name in values ? values[name] : whole);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));

let writes = 0;        // counts requests that write the file: a disk poll overlapping one is stale

async function api(path, body) {
  const url = path + (path.includes("?") ? "&" : "?") + "lang=" + encodeURIComponent(lang);
  const options = {headers: {"X-Kata-Token": token}};
  if (body !== undefined) {
    writes++;
    options.method = "POST";
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  if (body !== undefined) inFlight++;
  let response;
  try { response = await fetch(url, options); } finally { if (body !== undefined) inFlight--; }
  let data;
  try { data = await response.json(); } catch (e) { data = {error: await response.text()}; }
  data._status = response.status;
  return data;
}

function show(section) {
  for (const id of ["home", "kata", "report"]) $(id).hidden = id !== section;
}

function setMock(m) {
  mock = m;
  if (m) mockClockOffset = m.now * 1000 - Date.now();
  $("mock-bar").hidden = !m;
  if (m) $("mock-kata").textContent = fill(T.labeled, {label: T.mock, text: m.kata});
  tick();
}

function tick() {
  if (!mock) return;
  const left = Math.max(0, Math.round(mock.deadline - (Date.now() + mockClockOffset) / 1000));
  $("countdown").textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
  if (left === 0 && !mock.ending) { mock.ending = true; endMock("submit"); }  // time ran out: handed in as it stands
}
setInterval(tick, 1000);

function labels() {
  $("report-link").textContent = T.report;
  for (const [id, key] of [["btn-check", "check"], ["btn-hint", "hint"], ["btn-reset", "reset"],
      ["btn-restore", "restore"], ["btn-solution", "solution"], ["btn-quiz", "quiz"],
      ["mock-submit", "submit"], ["mock-abort", "abort"], ["conflict-load", "load_disk"],
      ["conflict-keep", "keep_mine"]]) $(id).textContent = T[key];
  document.documentElement.lang = lang;
}

async function loadTexts() {
  const data = await api("/api/texts");
  if (data._status !== 200) { document.body.textContent = data.error; return false; }
  T = data.texts; labels(); setMock(data.mock);
  return data;
}

async function renderHome() {
  if (!await loadTexts()) return;
  const data = await api("/api/home");  // grades the katas changed since last graded, as kata list does
  let html = `<p class="scoreboard">${esc(data.progress)}</p>`;
  html += `<p><button id="mock-random">${esc(T.start_mock)}: ${esc(T.random)}</button></p>`;
  for (const track of data.tracks) {
    html += `<h2>${esc(track.title)}</h2><table><tr><th>${esc(T.kata)}</th><th></th><th>${esc(T.status)}</th><th>${esc(T.hints)}</th><th>${esc(T.level)}</th><th></th></tr>`;
    for (const k of track.katas) {
      const cls = "status-" + k.status.replace(/ /g, "-");
      html += `<tr><td><a href="#kata/${k.id}">${esc(k.name)}</a>${k.id === data.next ? " ← " + esc(T.next) : ""}</td>` +
        `<td>${esc(k.title)}</td><td class="${cls}">${esc(k.status_text)}</td><td>${esc(k.hints)}</td>` +
        `<td>${esc(k.difficulty)}, ${k.minutes} ${esc(T.minutes)}</td>` +
        `<td><button data-mock="${k.id}">${esc(T.start_mock)}</button></td></tr>`;
    }
    html += "</table>";
  }
  $("home").innerHTML = html;
  show("home");
  $("mock-random").onclick = () => startMock({random: true});
  for (const b of document.querySelectorAll("[data-mock]")) b.onclick = () => startMock({kata: b.dataset.mock});
}

async function startMock(body) {
  const data = await api("/api/mock/start", body);
  if (data._status !== 200) { alert(data.error); return; }
  setMock(data.mock);
  location.hash = "#kata/" + data.mock.id;
}

async function renderKata(id) {
  if (!T.check) await loadTexts();
  const data = await api("/api/kata/" + id);
  if (data._status !== 200) { $("kata").textContent = data.error; show("kata"); return; }
  setMock(data.mock);
  current = {id: data.id, sha: data.sha};
  $("problem").innerHTML = data.readme;
  $("kata-name").textContent = data.name;
  $("file-name").textContent = data.file;
  $("output").innerHTML = "";
  $("conflict").hidden = true;
  if (!view) view = KataEditor.createEditor($("editor"), data.text, () => { dirty = true; saveState(); });
  else KataEditor.setText(view, data.text);
  dirty = false; saveState();
  show("kata");
}

function saveState() { $("save-state").textContent = dirty ? T.unsaved : T.saved; }

function output(html, cls) {
  $("output").innerHTML = `<div class="card ${cls || ""}">${html}</div>` + $("output").innerHTML;
}

function renderVerdict(v) {
  const board = v.scoreboard.map(esc).concat(v.skipped ? [fill(esc(T.labeled), {label: esc(T.skipped), text: v.skipped})] : []);
  let html = `<p class="scoreboard" id="scoreboard">${fill(esc(T.labeled), {label: esc(v.status_text), text: board.join(" · ")})}</p>`;
  if (v.error) html += `<pre>${esc(v.error)}</pre>`;
  if (v.note) html += `<p>${esc(v.note)}</p>`;
  let rows = "";
  for (const c of v.checks) {
    const cls = c.outcome === "passed" ? "passed" : (c.outcome === "skipped" ? "" : "failed");
    rows += `<div class="card ${cls} check" data-outcome="${esc(c.outcome)}">` +
      fill(esc(T.check_line), {title: `<strong>${esc(c.label)}</strong>`, tier: esc(c.tier_text), outcome: esc(c.outcome_text)});
    if (c.slug) rows += ` <span class="slug">[${esc(c.slug)}]</span>`;
    if (c.explanation) rows += `<p>${fill(esc(T.labeled), {label: esc(T.explanation), text: esc(c.explanation)})}</p>`;
    if (c.hint) rows += `<p>${fill(esc(T.labeled), {label: esc(T.mistake_hint), text: esc(c.hint)})}</p>`;
    if (c.verdict && c.outcome !== "passed") rows += `<pre>${esc(c.verdict)}</pre>`;
    if (c.pictures && c.outcome !== "passed") rows += heatmaps(c.pictures);
    rows += "</div>";
  }
  return `<div id="verdict">${html}${rows}</div>`;
}

// A failing matrix check's expected and actual matrices side by side, one colour scale
// for both: -inf dark, the smallest finite value light, the largest deep blue.
function heatmaps(p) {
  const finite = [...p.expected.flat(), ...p.got.flat()].filter((v) => typeof v === "number");
  const low = Math.min(...finite, 0), high = Math.max(...finite, 0);
  const cell = (v) => {
    if (typeof v === "string") return `<td class="inf" title="${esc(v)}">${v === "-inf" ? "−∞" : esc(v)}</td>`;
    const t = high > low ? (v - low) / (high - low) : 0;
    const light = Math.round(97 - 55 * t);
    return `<td style="background:hsl(215,70%,${light}%)" title="${v.toPrecision(4)}"></td>`;
  };
  const grid = (title, m) => `<figure><figcaption>${esc(title)}${p.at.length ? " [" + p.at.join(", ") + "]" : ""}</figcaption>` +
    `<table class="heatmap">${m.map((row) => "<tr>" + row.map(cell).join("") + "</tr>").join("")}</table></figure>`;
  return `<div class="heatmaps">${grid(T.expected, p.expected)}${grid(T.yours, p.got)}</div>`;
}

async function save(force) {
  const data = await api(`/api/kata/${current.id}/save`, {text: KataEditor.getText(view), base: current.sha, force: !!force});
  return afterSave(data);
}

function afterSave(data) {
  if (data._status === 409 && data.disk) { offerDisk(data.disk, data.error); return false; }
  if (data._status !== 200) { output(esc(data.error), "refused"); return false; }
  current.sha = data.sha; dirty = false; saveState();
  return true;
}

function offerDisk(disk, message) {
  $("conflict-text").textContent = (message || T.disk_changed) + " ";
  $("conflict").hidden = false;
  $("conflict-load").onclick = async () => {
    const kept = await api(`/api/kata/${current.id}/set-aside`, {text: KataEditor.getText(view)});
    if (kept._status !== 200) { output(esc(kept.error), "refused"); return; }  // nothing replaced
    KataEditor.setText(view, disk.text); current.sha = disk.sha; dirty = false; saveState();
    $("conflict").hidden = true;
    output(esc(kept.message), "");
  };
  $("conflict-keep").onclick = async () => { $("conflict").hidden = true; await save(true); };
}

async function check() {
  $("btn-check").disabled = true;
  $("output").innerHTML = `<div class="card" id="grading">${esc(T.checking)}</div>`;
  try {
    const data = await api(`/api/kata/${current.id}/check`, {text: KataEditor.getText(view), base: current.sha});
    $("output").innerHTML = "";
    if (!afterSave(data)) return;
    $("output").innerHTML = renderVerdict(data.verdict);
  } finally { $("btn-check").disabled = false; }
}

async function hint() {
  const data = await api(`/api/kata/${current.id}/hint`, {});
  if (data._status !== 200) { output(esc(data.error), "refused hint-refused"); return; }
  let html = `<strong>${esc(data.heading)}</strong>` + (data.code ? `<pre>${esc(data.text)}</pre>` : `<p>${esc(data.text)}</p>`);
  if (data.mistake) html += `<p><span class="slug">[${esc(data.mistake.slug)}]</span> ${esc(data.mistake.explanation)}</p><p>${fill(esc(T.labeled), {label: esc(T.mistake_hint), text: esc(data.mistake.hint)})}</p>`;
  output(html, "hint");
}

async function replaceFile(action, question) {
  if (question && !confirm(question)) return;
  const data = await api(`/api/kata/${current.id}/${action}`, {});
  if (data._status !== 200) { output(esc(data.error), "refused"); return; }
  KataEditor.setText(view, data.text); current.sha = data.sha; dirty = false; saveState();
  output(`<pre>${esc(data.message)}</pre>`, "");
}

async function solution() {
  if (!confirm(T.confirm_solution)) return;
  const data = await api(`/api/kata/${current.id}/solution`, {});
  if (data._status !== 200) { output(esc(data.error), "refused"); return; }
  output(`<pre>${esc(data.solution)}</pre><p>${esc(data.message)}</p>`, "");
}

async function quiz() {
  const data = await api(`/api/kata/${current.id}/quiz`);
  if (data._status !== 200) { output(esc(data.error), "refused"); return; }
  let html = '<form id="quiz-form">';
  for (const q of data.questions) {
    html += `<div>${q.prompt}`;
    if (q.choices.length) html += "<ol type=A>" + q.choices.map((c) => `<li>${esc(c)}</li>`).join("") + "</ol>";
    html += `<input name="${q.number}" placeholder="${esc(q.format)}"></div>`;
  }
  html += `<button>${esc(T.mark)}</button></form><div id="quiz-marks"></div>`;
  output(html, "");
  $("quiz-form").onsubmit = async (e) => {
    e.preventDefault();
    const answers = Object.fromEntries(new FormData(e.target).entries());
    const marks = await api(`/api/kata/${current.id}/quiz`, {answers});
    $("quiz-marks").innerHTML = `<pre>${esc(marks.marks.map((m) => m.text).join("\n\n"))}\n\n${esc(marks.score)}</pre>`;
  };
}

async function endMock(action) {
  if (action === "submit" && current && mock && current.id === mock.id && dirty) await save();  // the pad is what is handed in
  const data = await api("/api/mock/" + action, {});
  if (data._status !== 200) { alert(data.error); return; }
  setMock(null);
  let html = `<p class="scoreboard" id="mock-result">${esc(data.message.split("\n").pop())}</p>`;
  if (data.verdict) html += renderVerdict(data.verdict);
  show("kata"); $("output").innerHTML = html;
}

let inFlight = 0;      // POST requests not answered yet
async function pollDisk() {
  if (!current || $("kata").hidden || !$("conflict").hidden || inFlight) return;
  const before = writes, kata = current.id;
  const data = await api(`/api/kata/${kata}/file`);
  if (writes !== before || inFlight || !current || current.id !== kata) return;  // stale
  if (data._status === 200 && data.sha !== current.sha) offerDisk(data, T.disk_changed);
}
setInterval(pollDisk, 2000);

async function renderReport() {
  await loadTexts();
  const data = await api("/api/report");
  $("report").innerHTML = data.html || esc(data.error);
  show("report");
}

function route() {
  const hash = location.hash.slice(1);
  if (hash.startsWith("kata/")) renderKata(hash.slice(5));
  else if (hash === "report") renderReport();
  else renderHome();
}

$("lang").value = lang;
$("lang").onchange = async () => {
  lang = $("lang").value; localStorage.setItem("kata-lang", lang);
  await loadTexts();
  if (current && !$("kata").hidden) {
    const data = await api("/api/kata/" + current.id);
    $("problem").innerHTML = data.readme;
    saveState();
  } else route();
};
$("problem").addEventListener("click", (e) => {
  // The README's links to its other edition switch the language; other relative links
  // name files of the repository, not pages of the room.
  const link = e.target.closest("a");
  if (!link) return;
  e.preventDefault();
  if (/^https?:/.test(link.getAttribute("href") || "")) {  // another site: a new tab, no token sent
    window.open(link.href, "_blank", "noopener,noreferrer");
    return;
  }
  const href = link.getAttribute("href") || "";
  if (/README\.zh-CN\.md$/.test(href) || /README\.md$/.test(href)) {
    $("lang").value = href.endsWith("zh-CN.md") ? "zh-CN" : "en";
    $("lang").onchange();
  }
});
$("btn-check").onclick = check;
$("btn-hint").onclick = hint;
$("btn-reset").onclick = () => replaceFile("reset", T.confirm_reset);
$("btn-restore").onclick = () => replaceFile("restore");
$("btn-solution").onclick = solution;
$("btn-quiz").onclick = quiz;
$("mock-submit").onclick = () => endMock("submit");
$("mock-abort").onclick = () => endMock("abort");
$("home-link").onclick = (e) => { e.preventDefault(); location.hash = ""; route(); };
document.addEventListener("keydown", (e) => { if ((e.ctrlKey || e.metaKey) && e.key === "s") { e.preventDefault(); if (current) save(); } });
window.addEventListener("hashchange", route);
window.addEventListener("beforeunload", (e) => { if (dirty) { e.preventDefault(); e.returnValue = ""; } });
if (!token) document.body.textContent = "Open the address kata serve printed: it carries the token.";
else route();
