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
let here = null;       // the address (hash) the page shows now: a declined leave goes back to it
let shownAt = 0;       // counts the pages drawn: an answer for a page left meanwhile is dropped
let gradedAt = 0;      // counts the gradings asked for: only the latest one's verdict is shown
const $ = (id) => document.getElementById(id);
// One of the page's templates (T.labeled, T.check_line) filled in, every value escaped.
const fill = (template, values) => template.replace(/\{(\w+)\}/g, (whole, name) => name in values ? values[name] : whole);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
// A catalog text (a mistake's explanation, a hint) as HTML: escaped, with its markdown's
// `code`, **strong** and *emphasis* shown as such. An asterisk inside a word or an
// expression (h*d, i*d:(i+1)*d) is no emphasis and stays as it is; Chinese, which puts no
// space around a word, may have emphasis next to its characters (token *之前*的).
const CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef";
const STRONG = new RegExp(`(^|[\\s(\\["'${CJK}])\\*\\*(?=\\S)([^*\\n]*?\\S)\\*\\*(?=$|[\\s.,;:!?)\\]${CJK}])`, "g");
const EMPHASIS = new RegExp(`(^|[\\s(\\["'${CJK}])\\*(?=[^\\s*])([^*\\n]*?[^\\s*])\\*(?=$|[\\s.,;:!?)\\]${CJK}])`, "g");
function inline(text) {
  return String(text ?? "").split(/(`[^`\n]+`)/).map((part, i) => {
    if (i % 2) return `<code>${esc(part.slice(1, -1))}</code>`;
    return esc(part).replace(STRONG, "$1<strong>$2</strong>").replace(EMPHASIS, "$1<em>$2</em>");
  }).join("");
}

let writes = 0;        // counts requests that write the file: a disk poll overlapping one is stale
let pending = 0;       // requests the learner waits for: the header says "working…" meanwhile

function busy(change) {
  pending += change;
  const sign = $("busy");
  if (!sign) return;  // the page was replaced by a refusal (no token)
  sign.textContent = T.busy || "…";
  sign.hidden = pending <= 0;
}

// A request to the room. ``quiet``: one the learner did not ask for (the disk poll): no sign.
async function api(path, body, quiet) {
  const url = path + (path.includes("?") ? "&" : "?") + "lang=" + encodeURIComponent(lang);
  const options = {headers: {"X-Kata-Token": token}};
  if (body !== undefined) {
    writes++;
    options.method = "POST";
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  if (body !== undefined) inFlight++;
  if (!quiet) busy(1);
  let response, raw;
  try {
    response = await fetch(url, options);
    raw = await response.text();  // read once: a refusal may be plain text (401, 413)
  } catch (e) {  // no answer at all: the room was stopped
    return {error: T.no_room || "The practice room does not answer: is kata serve still running?", _status: 0};
  } finally {
    if (body !== undefined) inFlight--;
    if (!quiet) busy(-1);
  }
  let data;
  try { data = JSON.parse(raw); } catch (e) { data = null; }
  if (!data || typeof data !== "object" || Array.isArray(data)) {
    const text = raw.trim();
    data = {error: text && text.length < 600 && !text.startsWith("<") ? text
      : fill(T.room_failed || "The room could not answer (HTTP {status}).", {status: response.status})};
  }
  data._status = response.status;
  return data;
}

function show(section) {
  for (const id of ["home", "kata", "report", "missing"]) $(id).hidden = id !== section;
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
  const exact = mock.deadline - (Date.now() + mockClockOffset) / 1000;  // seconds, by the server's clock
  const left = Math.max(0, Math.ceil(exact));  // 0:00 once the deadline is past, never before
  $("countdown").textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
  // time ran out: the pad saved and handed in as it stands (the server waits a little for it)
  if (exact <= 0 && !mock.ending) { mock.ending = true; endMock("submit"); }
}
setInterval(tick, 1000);

function labels() {
  $("report-link").textContent = T.report;
  for (const [id, key] of [["btn-check", "check"], ["btn-run", "run"], ["btn-hint", "hint"], ["btn-reset", "reset"],
      ["btn-restore", "restore"], ["btn-solution", "solution"], ["btn-quiz", "quiz"],
      ["mock-submit", "submit"], ["mock-abort", "abort"], ["conflict-load", "load_disk"],
      ["conflict-keep", "keep_mine"]]) $(id).textContent = T[key];
  $("shortcuts").textContent = current && !current.hasExample ? T.shortcuts_no_run : T.shortcuts;
  document.documentElement.lang = lang;
  applyTheme();
}

// The theme: the learner's choice when there is one (remembered), else the system's.
const darkQuery = matchMedia("(prefers-color-scheme: dark)");
function applyTheme() {
  const theme = localStorage.getItem("kata-theme") || (darkQuery.matches ? "dark" : "light");
  document.documentElement.dataset.theme = theme;
  $("theme").textContent = theme === "dark" ? (T.theme_light || "☀") : (T.theme_dark || "☾");
  $("theme").setAttribute("aria-pressed", String(theme === "dark"));
}
darkQuery.addEventListener("change", applyTheme);
$("theme").onclick = () => {
  localStorage.setItem("kata-theme", document.documentElement.dataset.theme === "dark" ? "light" : "dark");
  applyTheme();
};
applyTheme();

// What the room remembers of each kata in this browser: unsaved editor text (with the file
// version it was typed on), where the README and the editor were scrolled, and the last
// verdict shown (not hints, runs or quizzes). Nothing here replaces the file on disk: a remembered text comes back as
// unsaved, and only Check or Ctrl+S writes it (with the usual backups).
const memoryKey = (id) => "kata-memory-" + id;
function recall(id) { try { return JSON.parse(localStorage.getItem(memoryKey(id)) || "{}"); } catch (e) { return {}; } }
function remember(changes) {
  if (!current) return;
  const memory = Object.assign(recall(current.id), changes);
  try { localStorage.setItem(memoryKey(current.id), JSON.stringify(memory)); } catch (e) { /* full: forget */ }
}
let rememberTimer = 0;
function rememberSoon() {
  clearTimeout(rememberTimer);
  rememberTimer = setTimeout(() => {
    if (!current || $("kata").hidden) return;
    remember({draft: dirty ? KataEditor.getText(view) : null, base: current.sha,
              problemScroll: $("problem").scrollTop, editorScroll: view.scrollDOM.scrollTop,
              editorScrollLeft: view.scrollDOM.scrollLeft,
              verdict: $("verdict") ? $("verdict").outerHTML : null});
  }, 250);
}

async function loadTexts() {
  const data = await api("/api/texts");
  if (data._status !== 200) { document.body.textContent = data.error; return false; }
  T = data.texts; labels(); setMock(data.mock);
  return data;
}

async function renderHome() {
  const ticket = ++shownAt;
  if (!await loadTexts()) return;
  // At once: the answer may take a while when katas changed on disk (each is graded first).
  $("home").innerHTML = `<p class="card" id="home-loading">${esc(T.loading_home)}</p>`;
  show("home");
  const data = await api("/api/home");  // grades the katas changed since last graded, as kata list does
  if (ticket !== shownAt) return;  // the learner went elsewhere meanwhile
  if (data._status !== 200) { $("home").innerHTML = `<p class="card refused">${esc(data.error)}</p>`; return; }
  let html = `<p class="scoreboard">${esc(data.progress)}</p>`;
  if (data.reviews_due.length) {  // the same list as `kata review`
    html += `<section id="reviews-due" class="card"><h2>${esc(T.reviews_due)}</h2><ul>` +
      data.reviews_due.map((r) => `<li data-kata="${esc(r.id)}"><a href="#kata/${esc(r.id)}">${esc(r.name)}</a> ` +
        `(${esc(r.due)}: ${esc(r.why)}${r.started ? esc(T.under_way) : ""}) <button data-review="${esc(r.id)}">${esc(T.start_review)}</button> ` +
        `<button data-review="${esc(r.id)}" data-as-mock="1">${esc(T.start_review)} ${esc(T.review_as_mock)}</button></li>`).join("") +
      "</ul></section>";
  } else if (data.review_next) html += `<p class="card" id="review-next">${esc(data.review_next)}</p>`;
  if (data.recurring.length) {
    html += `<section id="recurring" class="card"><h2>${esc(T.recurring)}</h2><ul>` +
      data.recurring.map((r) => `<li><span class="slug">[${esc(r.slug)}]</span> ${esc(r.katas.join(", "))}: ` +
        `${esc(fill(T.revisit, {lesson: r.lesson}))}</li>`).join("") + "</ul></section>";
  }
  html += `<p><button id="mock-random">${esc(T.start_mock)}: ${esc(T.random)}</button></p>`;
  for (const track of data.tracks) {
    html += `<h2>${esc(track.title)}</h2><table class="katas"><tr class="head"><th>${esc(T.kata)}</th><th></th><th>${esc(T.status)}</th><th>${esc(T.hints)}</th><th>${esc(T.level)}</th><th></th></tr>`;
    for (const k of track.katas) {
      const cls = "status-" + k.status.replace(/ /g, "-");
      html += `<tr><td class="name"><a href="#kata/${k.id}">${esc(k.name)}</a>${k.id === data.next ? " ← " + esc(T.next) : ""}</td>` +
        `<td class="title">${esc(k.title)}</td><td class="${cls}">${esc(k.status_text)}</td><td class="hints">${esc(k.hints)}</td>` +
        `<td class="level">${esc(k.difficulty)}, ${k.minutes} ${esc(T.minutes)}</td>` +
        `<td class="mock"><button data-mock="${k.id}">${esc(T.start_mock)}</button></td></tr>`;
    }
    html += "</table>";
  }
  $("home").innerHTML = html;
  $("mock-random").onclick = () => startMock({random: true});
  for (const b of document.querySelectorAll("[data-mock]")) b.onclick = () => startMock({kata: b.dataset.mock});
  for (const b of document.querySelectorAll("[data-review]")) b.onclick = () => startReview(b.dataset.review, !!b.dataset.asMock);
}

// A review: the kata from the skeleton (the file backed up first), or as a timed mock.
async function startReview(id, asMock) {
  if (!confirm(asMock ? T.confirm_review_mock : T.confirm_review)) return;
  const data = await api("/api/review/start", {kata: id, mock: asMock});
  if (data._status !== 200) { alert(data.error); return; }
  setMock(data.mock);  // as "Start a mock" does: the kata's page, the mock's clock running
  if (location.hash === "#kata/" + data.id) route(); else location.hash = "#kata/" + data.id;
}

async function startMock(body) {
  const data = await api("/api/mock/start", body);
  if (data._status !== 200) { alert(data.error); return; }
  setMock(data.mock);
  location.hash = "#kata/" + data.mock.id;
}

async function renderKata(id) {
  const ticket = ++shownAt;
  if (!T.check) await loadTexts();
  const data = await api("/api/kata/" + id);
  if (ticket !== shownAt) return;
  if (data._status !== 200) {  // no such kata (#kata/99, a typo): say so; the page keeps working
    current = null;
    $("missing").innerHTML = `<p class="card refused" id="missing-text">${esc(data.error)}</p>` +
      `<p><a href="#" id="missing-home">${esc(T.home)}</a></p>`;
    show("missing");
    return;
  }
  setMock(data.mock);
  current = {id: data.id, sha: data.sha, hasExample: !!data.has_example};
  labels();  // the shortcuts line: Alt+Enter only where there is an example to run
  $("problem").innerHTML = data.readme;
  $("kata-name").textContent = data.name;
  $("file-name").textContent = data.file; $("file-name").title = data.file;
  $("btn-run").hidden = !data.has_example;  // a README with no >>> example: nothing to run
  $("output").innerHTML = "";
  $("conflict").hidden = true;
  if (!view) {
    view = KataEditor.createEditor($("editor"), data.text, () => { dirty = true; saveState(); rememberSoon(); });
    view.scrollDOM.addEventListener("scroll", rememberSoon);
  } else KataEditor.setText(view, data.text);
  dirty = false; saveState();
  show("kata");
  const memory = recall(data.id);
  if (memory.draft && memory.base === data.sha && memory.draft !== data.text) {
    KataEditor.setText(view, memory.draft); dirty = true; saveState();
    output(esc(T.draft_restored), "draft-restored");
  } else if (memory.verdict) $("output").innerHTML = memory.verdict;  // the last verdict
  $("problem").scrollTop = memory.problemScroll || 0;
  // this kata's own scroll, both ways: never the last kata's sideways one
  view.scrollDOM.scrollTop = memory.editorScroll || 0;
  view.scrollDOM.scrollLeft = memory.editorScrollLeft || 0;
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
  const explained = new Set();  // each mistake's explanation and hint once, at its first check
  for (const c of v.checks) {
    const cls = c.outcome === "passed" ? "passed" : (c.outcome === "skipped" ? "" : "failed");
    rows += `<div class="card ${cls} check" data-outcome="${esc(c.outcome)}">` +
      fill(esc(T.check_line), {title: `<strong>${esc(c.label)}</strong>`, tier: esc(c.tier_text), outcome: esc(c.outcome_text)});
    if (c.slug) rows += ` <span class="slug">[${esc(c.slug)}]</span>`;
    const said = [c.explanation, c.hint].join("\n");
    if ((c.explanation || c.hint) && explained.has(said)) {
      rows += `<p class="explained-above">${esc(T.explained_above)}</p>`;
    } else {
      explained.add(said);
      if (c.explanation) rows += `<p class="explanation">${fill(esc(T.labeled), {label: esc(T.explanation), text: inline(c.explanation)})}</p>`;
      if (c.hint) rows += `<p class="mistake-hint">${fill(esc(T.labeled), {label: esc(T.mistake_hint), text: inline(c.hint)})}</p>`;
    }
    if (c.verdict && c.outcome !== "passed") rows += `<pre>${esc(c.verdict)}</pre>`;
    if (c.pictures && c.outcome !== "passed") rows += c.pictures.kind === "sequence" ? sequenceDiff(c.pictures) : heatmaps(c.pictures);
    rows += "</div>";
  }
  return `<div id="verdict">${html}${rows}</div>`;
}


$("output").addEventListener("click", (e) => { if (e.target.matches("button.copy")) copyText(e.target); });

// The panes' sizes: README | work (a share of the width) and editor / verdict (a share of
// the height), dragged by their handles (or moved with the arrow keys), remembered.
function setPanes(sizes) {
  const columns = Math.min(0.85, Math.max(0.15, sizes.columns ?? 0.4));
  const rows = Math.min(0.9, Math.max(0.15, sizes.rows ?? 0.6));
  $("kata").style.setProperty("--left", columns + "fr");
  $("kata").style.setProperty("--right", (1 - columns) + "fr");
  $("work").style.setProperty("--editor-grow", rows);
  $("work").style.setProperty("--output-grow", 1 - rows);
  return {columns, rows};
}
let panes = setPanes(JSON.parse(localStorage.getItem("kata-panes") || "{}"));
function dragHandle(handle, share) {
  handle.tabIndex = 0;
  handle.addEventListener("pointerdown", (e) => {
    e.preventDefault(); handle.setPointerCapture(e.pointerId); handle.classList.add("dragging");
    const move = (m) => { panes = setPanes({...panes, ...share(m)}); };
    const up = () => {
      handle.classList.remove("dragging");
      handle.removeEventListener("pointermove", move); handle.removeEventListener("pointerup", up);
      localStorage.setItem("kata-panes", JSON.stringify(panes));
    };
    handle.addEventListener("pointermove", move); handle.addEventListener("pointerup", up);
  });
  handle.addEventListener("keydown", (e) => {
    const step = {ArrowLeft: -0.05, ArrowUp: -0.05, ArrowRight: 0.05, ArrowDown: 0.05}[e.key];
    if (!step) return;
    e.preventDefault();
    const key = handle.id === "split-columns" ? "columns" : "rows";
    panes = setPanes({...panes, [key]: panes[key] + step});
    localStorage.setItem("kata-panes", JSON.stringify(panes));
  });
}
dragHandle($("split-columns"), (e) => {
  const box = $("kata").getBoundingClientRect();
  return {columns: (e.clientX - box.left) / box.width};
});
dragHandle($("split-rows"), (e) => {
  const top = $("editor").getBoundingClientRect().top, bottom = $("output").getBoundingClientRect().bottom;
  return {rows: (e.clientY - top) / Math.max(1, bottom - top)};
});

async function save(force) {
  const data = await api(`/api/kata/${current.id}/save`, {text: KataEditor.getText(view), base: current.sha, force: !!force});
  return afterSave(data);
}

function afterSave(data) {
  if (data._status === 409 && data.disk) { offerDisk(data.disk, data.error); return false; }
  if (data._status !== 200) { output(esc(data.error), "refused"); return false; }
  current.sha = data.sha; dirty = false; saveState(); rememberSoon();
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

let verdictShown = false;  // the output holds a verdict (re-graded in the new language on a switch)

async function check() {
  const ticket = ++gradedAt;
  $("btn-check").disabled = true;
  $("output").innerHTML = `<div class="card" id="grading">${esc(T.checking)}</div>`;
  try {
    const data = await api(`/api/kata/${current.id}/check`, {text: KataEditor.getText(view), base: current.sha});
    if (ticket !== gradedAt) return;
    $("output").innerHTML = "";
    if (!afterSave(data)) return;
    $("output").innerHTML = renderVerdict(data.verdict);
    verdictShown = true;
    rememberSoon();
  } finally { $("btn-check").disabled = false; }
}

// Run: the README's example (its >>> lines) against the editor's text, saved first; what
// each line printed, its value and the shapes of its tensors, above the verdict.
async function runExample() {
  $("btn-run").disabled = true;
  try {
    const data = await api(`/api/kata/${current.id}/run`, {text: KataEditor.getText(view), base: current.sha});
    if (!afterSave(data)) return;
    const run = data.run;
    if (run.error) { output(`<strong>${esc(T.run_title)}</strong><pre>${esc(run.error)}</pre>`, "run refused"); return; }
    const text = run.lines.map((line) => [">>> " + line.source.replace(/\n/g, "\n... "),
      line.printed ? line.printed.replace(/\n$/, "") : "",
      line.value !== undefined ? line.value + (line.shapes.length ? "    # " + line.shapes.join(", ") : "") : "",
      line.error || ""].filter(Boolean).join("\n")).join("\n");
    const failed = run.lines.some((line) => line.error);
    output(`<strong>${esc(T.run_title)}</strong><pre class="code">${esc(text)}</pre>`, "run" + (failed ? " failed" : ""));
  } finally { $("btn-run").disabled = false; }
}

// The verdict shown, again in the language just chosen: the file on disk (what was checked;
// the editor and its unsaved text are left alone) graded once more.
async function regradeShown() {
  const kata = current.id, ticket = ++gradedAt;
  $("btn-check").disabled = true;
  $("output").innerHTML = `<div class="card" id="grading">${esc(T.checking)}</div>`;
  try {
    const disk = await api(`/api/kata/${kata}/file`);
    const data = disk._status === 200 ? await api(`/api/kata/${kata}/check`, {text: disk.text, base: disk.sha}) : disk;
    if (ticket !== gradedAt || !current || current.id !== kata) return;
    $("output").innerHTML = data._status === 200 ? renderVerdict(data.verdict) : "";
    if (data._status !== 200) output(esc(data.error), "refused");
  } finally { $("btn-check").disabled = false; }
}

async function hint() {
  const data = await api(`/api/kata/${current.id}/hint`, {});
  if (data._status !== 200) { output(esc(data.error), "refused hint-refused"); return; }
  let html = `<strong>${esc(data.heading)}</strong>` + (data.code ? `<pre class="code">${esc(data.text)}</pre>` : `<p>${inline(data.text)}</p>`);
  if (data.exhausted) html += `<p class="exhausted">${esc(fill(T.hints_exhausted, {total: data.total}))}</p>`;
  if (data.mistake) html += `<p><span class="slug">[${esc(data.mistake.slug)}]</span> ${inline(data.mistake.explanation)}</p><p>${fill(esc(T.labeled), {label: esc(T.mistake_hint), text: inline(data.mistake.hint)})}</p>`;
  output(html, "hint");
}

// Reset and Restore replace the file and the editor. Unsaved text in the editor is saved
// first, so that the command backs it up with the file and Restore brings it back.
async function replaceFile(action, question) {
  if (question && !confirm(question)) return;
  const kata = current.id;
  const info = await api(`/api/kata/${kata}`);
  $("output").innerHTML = "";  // the answer to this press alone, never stacked on the last one
  if (action === "restore" && (!info.backups || (info.mock && info.mock.id === kata))) {
    // Nothing to bring back: the server says so, and the editor keeps its text.
    const data = await api(`/api/kata/${kata}/restore`, {});
    const said = data._status === 200 ? data.message : data.error;
    output(`<pre>${esc(said)}</pre>` + (dirty ? `<p>${esc(T.editor_kept)}</p>` : ""), "refused");
    return;
  }
  if (dirty && !await save()) return;  // a conflict is offered instead; nothing replaced
  const data = await api(`/api/kata/${kata}/${action}`, {});
  if (data._status !== 200) { output(esc(data.error), "refused"); return; }
  if (!current || current.id !== kata) return;
  KataEditor.setText(view, data.text); current.sha = data.sha; dirty = false; saveState();
  output(`<pre>${esc(data.message)}</pre>`, "");
}

async function solution() {
  if (!confirm(T.confirm_solution)) return;
  const data = await api(`/api/kata/${current.id}/solution`, {});
  if (data._status !== 200) { output(esc(data.error), "refused"); return; }
  output(`<pre class="code">${esc(data.solution)}</pre><p>${esc(data.message)}</p>`, "");
}

async function quiz() {
  const data = await api(`/api/kata/${current.id}/quiz`);
  if (data._status !== 200) { output(esc(data.error), "refused"); return; }
  let html = '<form id="quiz-form">';
  for (const q of data.questions) {
    html += `<div>${q.prompt}`;
    if (q.choices.length) html += "<ol type=A>" + q.choices.map((c) => `<li>${inline(c)}</li>`).join("") + "</ol>";
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
  verdictShown = !!data.verdict;
}

let inFlight = 0;      // POST requests not answered yet
async function pollDisk() {
  if (!current || $("kata").hidden || !$("conflict").hidden || inFlight) return;
  const before = writes, kata = current.id;
  const data = await api(`/api/kata/${kata}/file`, undefined, true);
  if (writes !== before || inFlight || !current || current.id !== kata) return;  // stale
  if (data._status === 200 && data.sha !== current.sha) offerDisk(data, T.disk_changed);
}
setInterval(pollDisk, 2000);

async function renderReport() {
  const ticket = ++shownAt;
  await loadTexts();
  const data = await api("/api/report");
  if (ticket !== shownAt) return;
  $("report").innerHTML = data.html || esc(data.error);
  show("report");
}

// Before the page leaves the open kata (Home, another kata, the report, any change of
// address): unsaved text in the editor is not dropped without a word. The learner is asked;
// yes keeps the text as a backup (Restore brings it back), no stays.
async function mayLeave() {
  if (!current || !dirty || $("kata").hidden) return true;
  if (!confirm(T.confirm_leave)) return false;
  const kept = await api(`/api/kata/${current.id}/set-aside`, {text: KataEditor.getText(view)});
  if (kept._status !== 200) { output(esc(kept.error), "refused"); return false; }
  dirty = false; saveState(); remember({draft: null});  // the backup holds it now
  return true;
}

async function route() {
  const hash = location.hash;
  if (here !== null && hash !== here && !await mayLeave()) {
    history.replaceState(null, "", here || location.pathname + location.search);  // no hashchange
    return;
  }
  here = hash;
  verdictShown = false;
  const target = hash.slice(1);
  if (target.startsWith("kata/")) await renderKata(target.slice(5));
  else if (target === "report") await renderReport();
  else await renderHome();
}

$("lang").value = lang;
$("lang").onchange = async () => {
  lang = $("lang").value; localStorage.setItem("kata-lang", lang);
  await loadTexts();
  if (current && !$("kata").hidden) {
    const kata = current.id, ticket = shownAt;
    const data = await api("/api/kata/" + kata);
    if (ticket !== shownAt || !current || current.id !== kata) return;  // another page meanwhile
    $("problem").innerHTML = data.readme;
    saveState();
    if (verdictShown) await regradeShown();  // a verdict is never left in the old language
  } else if ($("missing").hidden) await renderShown();
  else $("missing-home").textContent = T.home;
};
// The page shown now, again (in the language just chosen): no leave, nothing asked.
async function renderShown() {
  const target = (here || "").slice(1);
  if (target === "report") await renderReport();
  else if (!target.startsWith("kata/")) await renderHome();
}
$("problem").addEventListener("scroll", rememberSoon);
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
$("btn-run").onclick = runExample;
$("btn-hint").onclick = hint;
$("btn-reset").onclick = () => replaceFile("reset", T.confirm_reset);
$("btn-restore").onclick = () => replaceFile("restore");
$("btn-solution").onclick = solution;
$("btn-quiz").onclick = quiz;
$("mock-submit").onclick = () => { if (confirm(T.confirm_submit)) endMock("submit"); };
$("mock-abort").onclick = () => endMock("abort");
// Home: a change of address (route asks first when the editor has unsaved text), or, when
// the address is home already, home drawn again.
const goHome = (e) => {
  e.preventDefault();
  if (location.hash === "" || location.hash === "#") route(); else location.hash = "";
};
$("home-link").onclick = goHome;
$("missing").addEventListener("click", (e) => { if (e.target.id === "missing-home") goHome(e); });
// Ctrl+S (⌘+S) saves, Ctrl+Enter (⌘+Enter) checks: caught before the editor sees them.
document.addEventListener("keydown", (e) => {
  if (!(e.ctrlKey || e.metaKey) || !current || $("kata").hidden) return;
  if (e.key === "s") { e.preventDefault(); save(); }
  else if (e.key === "Enter") {
    e.preventDefault(); e.stopPropagation();
    if (!$("btn-check").disabled) check();
  }
}, true);
document.addEventListener("keydown", (e) => {  // Alt+Enter runs the README's example
  if (!e.altKey || e.key !== "Enter" || !current || $("kata").hidden) return;
  e.preventDefault(); e.stopPropagation();
  if (!$("btn-run").disabled && !$("btn-run").hidden) runExample();
}, true);
window.addEventListener("hashchange", route);
// Closing the tab or reloading with unsaved text: the browser asks; when the learner leaves
// anyway, the text is kept as a backup on the way out (Restore brings it back).
window.addEventListener("beforeunload", (e) => { if (dirty && current && !$("kata").hidden) { e.preventDefault(); e.returnValue = ""; } });
window.addEventListener("pagehide", () => {
  if (!dirty || !current || $("kata").hidden) return;
  fetch(`/api/kata/${current.id}/set-aside?lang=${encodeURIComponent(lang)}`, {
    method: "POST", keepalive: true,
    headers: {"X-Kata-Token": token, "Content-Type": "application/json"},
    body: JSON.stringify({text: KataEditor.getText(view)})});
});
if (!token) document.body.textContent = "Open the address kata serve printed: it carries the token.";
else route();
