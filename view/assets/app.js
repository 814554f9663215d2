// oxefs view: the page reads the daemon's JSON endpoints and draws what
// a trainer receives. Every value drawn is also written into the DOM as
// data-* attributes, so tests read values, not pixels.
"use strict";

// Errors of the page itself are shown, and kept in #errors for tests.
const pageErrors = [];
function reportError(msg) {
  pageErrors.push(String(msg));
  const el = document.getElementById("errors");
  if (el) { el.hidden = false; el.textContent = pageErrors.join("\n"); }
}
window.addEventListener("error", (e) => reportError("error: " + (e.message || e.type) + (e.filename ? " (" + e.filename + ":" + e.lineno + ")" : "")), true);
window.addEventListener("unhandledrejection", (e) => reportError("unhandled: " + (e.reason && e.reason.stack || e.reason)));
const consoleError = console.error.bind(console);
console.error = (...a) => { reportError("console.error: " + a.join(" ")); consoleError(...a); };

const SVGNS = "http://www.w3.org/2000/svg";
const params = new URLSearchParams(location.search);
const state = {
  rank: params.get("rank") || "",
  view: params.get("view") || "train",
  n: params.get("n") || "0",
  samples: params.get("samples") || "8",
  live: params.get("live") !== "0",
};

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

async function api(path, q) {
  const u = new URL(path, location.href);
  for (const [k, v] of Object.entries(q || {})) if (v !== "" && v !== undefined) u.searchParams.set(k, v);
  const r = await fetch(u);
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) { const e = new Error(body.error || r.statusText); e.status = r.status; throw e; }
  return body;
}

const pct = (v) => (100 * v).toFixed(1) + "%";
const bytes = (b) => b >= 1 << 30 ? (b / (1 << 30)).toFixed(2) + " GiB" : b >= 1 << 20 ? (b / (1 << 20)).toFixed(1) + " MiB" : b >= 1024 ? (b / 1024).toFixed(1) + " KiB" : b + " B";
const ms = (s) => (1000 * s).toFixed(1) + " ms";
const num = (v) => typeof v === "number" ? v : Number(v);

// ---- the mix ----
function mixTable(part, view) {
  const t = el("table", { class: "mix", "data-view": view },
    el("tr", {}, ...["dataset", "source", "split", "target", "realised", "", "samples", "episodes", "units", "too short", "unreadable", "substituted"].map((h) => el("th", { text: h }))));
  for (const d of part.datasets) {
    const bars = el("span", { class: "bars" });
    const tb = el("span", { class: "bar target" }); tb.style.width = (160 * d.weight) + "px";
    const rb = el("span", { class: "bar" }); rb.style.width = (160 * d.share) + "px";
    bars.append(rb, tb);
    const bad = d.bad.length ? d.bad.map((b) => b.episode + ": " + b.reason).join("\n") : "";
    t.append(el("tr", { "data-dataset": d.name, "data-target": d.weight, "data-share": d.share, "data-samples": d.samples },
      el("td", { text: d.name }), el("td", { class: "muted", text: d.source }), el("td", { text: d.split }),
      el("td", { class: "num", text: pct(d.weight) }), el("td", { class: "num share", text: part.samples ? pct(d.share) : "–" }), el("td", {}, bars),
      el("td", { class: "num", text: d.samples }), el("td", { class: "num", text: d.episodes ?? "?" }), el("td", { class: "num", text: d.sample_units ?? "?" }),
      el("td", { class: "num", text: fmtList(d.episodes_too_short) }), el("td", { class: "num", text: fmtList(d.episodes_unreadable) }),
      el("td", { class: "bad", title: bad, text: d.bad.length ? d.bad.length + (d.unusable ? " — unusable: " + d.unusable : "") : (d.unusable || "") })));
  }
  return t;
}
function fmtList(v) { return v === null || v === undefined ? "?" : Array.isArray(v) ? String(v.length) : String(v); }
function subsText(s) { const k = Object.keys(s); return k.length ? k.map((r) => r + ": " + s[r]).join(", ") : "none"; }

async function renderMix() {
  const m = await api("/api/mix", { rank: state.rank });
  const body = document.querySelector("#mix .body");
  body.replaceChildren(
    el("p", { text: `${m.mode === "steps" ? "step samples" : "frame pairs"}, batches of ${m.batch_size}, rank ${m.rank} of ${m.world}. Realised shares are over the samples of every batch built so far (${m.train.samples} samples, readahead included).` }),
    el("h3", { text: "train" }), mixTable(m.train, "train"),
    el("p", { class: "subs", "data-view": "train", text: "substitutions: " + subsText(m.train.substitutions) }));
  if (m.val) body.append(el("h3", { text: `val (${m.val.num_batches} batches, one pass)` }), mixTable(m.val, "val"),
    el("p", { class: "subs", "data-view": "val", text: "substitutions: " + subsText(m.val.substitutions) }));
  else body.append(el("p", { class: "muted", text: "no val view: no dataset names a val_split" }));
  const sel = document.getElementById("rank");
  const ranks = m.ranks && m.ranks.length ? m.ranks : [m.rank];
  sel.replaceChildren(...ranks.map((r) => el("option", { value: r, text: r })));
  sel.value = String(m.rank);
  return m;
}

// ---- a batch ----
// Cards are built as HTML text (one parse per card), which is many times
// faster than an element at a time for a batch of 64 samples.
const esc = (v) => String(v).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

function chartHTML(name, series, info, dim, w, h) {
  const steps = series.values.length;
  const vals = series.values.map((v) => num(v[dim]));
  const finite = vals.filter(Number.isFinite);
  let lo = Math.min(0, ...finite), hi = Math.max(0, ...finite);
  if (hi === lo) { hi += 1; lo -= 1; }
  const pad = 3;
  const x = (k) => pad + (steps === 1 ? (w - 2 * pad) / 2 : (w - 2 * pad) * k / (steps - 1));
  const y = (v) => h - pad - (h - 2 * pad) * (v - lo) / (hi - lo);
  const half = steps === 1 ? w / 2 : (w - 2 * pad) / (steps - 1) / 2;
  let g = "";
  (series.is_pad || []).forEach((p, k) => {
    if (p) g += `<rect class="padshade" data-step="${k}" x="${(x(k) - half).toFixed(1)}" y="0" width="${(2 * half).toFixed(1)}" height="${h}"></rect>`;
  });
  g += `<line x1="0" x2="${w}" y1="${y(0).toFixed(1)}" y2="${y(0).toFixed(1)}" stroke="#ccc"></line>`;
  const pts = [];
  vals.forEach((v, k) => { if (Number.isFinite(v)) pts.push(`${x(k).toFixed(1)},${y(v).toFixed(1)}`); });
  g += `<polyline points="${pts.join(" ")}" data-values="${esc(vals.map(String).join(" "))}"></polyline>`;
  if (steps <= 2) vals.forEach((v, k) => { if (Number.isFinite(v)) g += `<circle class="dot" cx="${x(k).toFixed(1)}" cy="${y(v).toFixed(1)}" r="2.5"></circle>`; });
  const masked = !series.mask || series.mask[dim];
  const range = finite.length ? lo.toPrecision(3) + "…" + hi.toPrecision(3) : "no finite value";
  return `<div class="chart${masked ? "" : " unmasked"}" data-series="${name}" data-dim="${dim}" data-mask="${masked ? 1 : 0}">` +
    `<div>${name}[${dim}]${masked ? "" : " (padding)"} ${range}${finite.length < vals.length ? " — " + (vals.length - finite.length) + " not finite" : ""}</div>` +
    `<svg width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">${g}</svg></div>`;
}

function frameURL(b, i, slot, k) {
  const q = new URLSearchParams({ view: b.view, n: b.n, sample: i, slot: slot, step: k });
  if (state.rank !== "") q.set("rank", b.rank);
  return "/api/frame?" + q;
}

// The first eagerSamples samples are drawn whole with the page, their
// frames loaded. The others' charts are drawn after those frames are in,
// a few cards at a time (drawLater), and their frames are then left to
// the browser to fetch as they are scrolled near (loading="lazy"): a
// batch of 64 samples with a chunk of 50 has some 1,500 charts, megabytes
// of SVG that would cost the first screen a second to parse and lay out,
// and 256 frames, most of them far below the fold.
const eagerSamples = 4;

function sampleHTML(b, s) {
  const lazy = s.index >= eagerSamples;
  let h = `<div class="sample${s.repeat ? " repeat" : ""}" data-sample="${s.index}" data-dataset="${esc(s.dataset || "")}" data-episode="${esc(s.episode || "")}" data-t="${s.t ?? ""}" data-charts="${lazy ? "lazy" : "1"}">`;
  const epLink = s.episode ? `<a href="?${esc(new URLSearchParams({ episode: s.episode }))}#episode"><code>${esc(s.episode)}</code></a>` : "<code>?</code>";
  h += `<h3><b>#${s.index} ${esc(s.dataset || "?")}</b> episode ${epLink} t=${s.t ?? "?"}` +
    (s.frame_indices ? " frames " + s.frame_indices.join(", ") : "") + (s.offset !== undefined ? " offset " + s.offset : "") +
    (s.repeat ? " — repeat (val top-up)" : "") + `</h3><div class="task">task: ${esc(s.task || "(none)")}</div>`;
  b.slots.forEach((slot, si) => {
    const ss = s.slots[si];
    h += `<div class="slot" data-slot="${esc(slot.name)}" data-mask="${ss.mask ? 1 : 0}"><div class="name">${esc(slot.name)}${ss.mask ? "" : " (missing)"}</div>`;
    slot.deltas.forEach((d, k) => {
      const padded = ss.is_pad ? ss.is_pad[k] : false;
      const label = b.mode === "pairs" ? `frame ${s.frame_indices ? s.frame_indices[k] : k}` : `t${d >= 0 ? "+" : ""}${d}`;
      h += `<figure class="frame${padded ? " pad" : ""}${ss.mask ? "" : " missing"}" data-step="${k}" data-delta="${d}" data-pad="${padded ? 1 : 0}">` +
        `<img alt="${esc(slot.name)} step ${k}" width="${Math.min(160, slot.size[1])}" height="${Math.round(Math.min(160, slot.size[1]) * slot.size[0] / slot.size[1])}" data-loaded="${lazy ? "lazy" : "0"}" ${lazy ? "data-src" : "src"}="${esc(frameURL(b, s.index, slot.name, k))}">` +
        `<figcaption>${label}${padded ? " pad" : ""}${ss.mask ? "" : " missing"}</figcaption></figure>`;
    });
    h += "</div>";
  });
  return h + (lazy ? `<div class="charts-lazy"></div>` : seriesHTML(b, s)) + "</div>";
}

// seriesHTML draws a sample's action and state charts and its other
// arrays.
function seriesHTML(b, s) {
  let h = "";
  for (const [name, info] of [["action", b.action], ["state", b.state]]) {
    const series = s[name];
    if (!info || !series) continue;
    const dims = series.values[0] ? series.values[0].length : 0;
    h += `<div>${name}${info.summed ? " (summed over [t, t+offset))" : ` at deltas ${info.deltas[0]}…${info.deltas[info.deltas.length - 1]}`}</div>`;
    h += `<div class="charts" data-series="${name}" data-steps="${series.values.length}">`;
    for (let d = 0; d < dims; d++) h += chartHTML(name, series, info, d, info.deltas.length > 2 ? 120 : 60, 50);
    h += "</div>";
  }
  if (b.extra && b.extra.length && s.extra) {
    h += `<div>other arrays of the sample (e.g. augmentation parameters):</div><table class="extra">`;
    for (const a of b.extra) {
      const v = s.extra[a.name] || [];
      h += `<tr data-array="${esc(a.name)}" data-values="${esc(v.map(String).join(" "))}"><th>${esc(a.name)} ${esc(JSON.stringify(a.shape.slice(1)))}</th><td>${esc(v.join(", "))}</td></tr>`;
    }
    h += "</table>";
  }
  return h;
}

// drawLater draws the cards under root that wait (data-charts="lazy"),
// a few per task so that the page stays responsive: their charts, and
// their frames' sources, which the browser fetches once scrolled near.
function drawLater(root, b) {
  const pending = [...root.querySelectorAll('.sample[data-charts="lazy"]')];
  const step = () => {
    for (const card of pending.splice(0, 4)) {
      for (const img of card.querySelectorAll("img[data-src]")) { img.loading = "lazy"; img.src = img.dataset.src; img.removeAttribute("data-src"); }
      card.querySelector(".charts-lazy").outerHTML = seriesHTML(b, b.samples[+card.dataset.sample]);
      card.dataset.charts = "1";
    }
    if (pending.length) setTimeout(step, 0);
    else if (params.get("timing") === "1") console.info("oxefs-view-timing all cards");
  };
  step();
}

// imagesSettled resolves once every image under root that loads with the
// page has loaded or failed; a failure is reported. Lazy images are
// marked as they load.
function imagesSettled(root) {
  root.addEventListener("load", (e) => { if (e.target.dataset && e.target.dataset.loaded === "lazy") e.target.dataset.loaded = "1"; }, true);
  const imgs = [...root.querySelectorAll('img[data-loaded="0"]')];
  return Promise.all(imgs.map((img) => new Promise((res) => {
    const done = (ok) => {
      img.dataset.loaded = ok ? "1" : "error";
      if (!ok) reportError("frame did not load: " + img.getAttribute("src"));
      res();
    };
    if (img.complete && img.naturalWidth > 0) { done(true); return; }
    img.addEventListener("load", () => done(true), { once: true });
    img.addEventListener("error", () => done(false), { once: true });
  }))).then(() => imgs.length);
}

async function renderBatch() {
  const body = document.querySelector("#batch .body");
  let b;
  try {
    b = await api("/api/batch", { rank: state.rank, view: state.view, n: state.n });
  } catch (e) {
    if (e.status && e.status < 500) { body.replaceChildren(el("p", { class: "refused", text: "refused: " + e.message })); return; }
    throw e;
  }
  const shown = Math.max(1, Math.min(b.samples.length, parseInt(state.samples, 10) || 8));
  body.replaceChildren(el("p", { class: "batchinfo", "data-mode": b.mode, "data-n": b.n, "data-view": b.view, "data-samples": b.samples.length, text: `${b.view} batch ${b.n} of ${b.num_batches} (${b.mode === "steps" ? "step samples" : "frame pairs"}, layout ${b.layout}), samples 0–${shown - 1} of ${b.samples.length}` }));
  const counts = {};
  for (const s of b.samples) counts[s.dataset] = (counts[s.dataset] || 0) + 1;
  body.append(el("p", { class: "batchmix", text: "in this batch: " + Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(", ") }));
  if (params.get("timing") === "1") console.info("oxefs-view-timing batch json");
  const cards = el("div", { class: "samples" });
  cards.innerHTML = b.samples.slice(0, shown).map((s) => sampleHTML(b, s)).join("");
  body.append(cards);
  if (params.get("timing") === "1") console.info("oxefs-view-timing cards");
  document.body.dataset.images = String(await imagesSettled(cards));
  if (params.get("timing") === "1") console.info("oxefs-view-timing frames");
  drawLater(cards, b);
}

// ---- an episode ----
// The scrubber reads the mix's datasets through the daemon (mount --view):
// one episode's frames per camera, a step at a time, with its action and
// state curves and a cursor at the step.
async function renderEpisodes() {
  const body = document.querySelector("#episode .body");
  let sets;
  try { sets = await api("/api/episodes"); } catch (e) {
    if (e.status === 404) { body.replaceChildren(el("p", { class: "muted", text: e.message })); return; }
    throw e;
  }
  // episode=dataset/split/index, or an episode id dataset/split/shard/record
  const want = (params.get("episode") || "").split("/");
  const ds = el("select", { id: "ep-dataset" }, ...sets.map((d) => el("option", { value: d.name, text: d.name })));
  const sp = el("select", { id: "ep-split" });
  const ix = el("input", { id: "ep-index", type: "number", min: 0, value: want[2] || "0" });
  const fillSplits = () => {
    const d = sets.find((x) => x.name === ds.value) || sets[0];
    sp.replaceChildren(...d.splits.map((s) => el("option", { value: s.name, text: `${s.name} (${s.episodes})` })));
  };
  if (want[0]) ds.value = want[0];
  fillSplits();
  if (want[1]) sp.value = want[1];
  ds.addEventListener("change", fillSplits);
  const view = el("div", { class: "episode" });
  const go = el("button", { type: "button", text: "show" });
  go.addEventListener("click", () => showEpisode(view, ds.value, sp.value, ix.value).catch((e) => reportError("episode: " + e.message)));
  body.replaceChildren(el("div", { class: "scrub" }, el("label", {}, "dataset ", ds), el("label", {}, "split ", sp), el("label", {}, "episode ", ix), go), view);
  if (want.length === 4) await showEpisode(view, "", "", "", params.get("episode"));
  else if (params.get("episode")) await showEpisode(view, ds.value, sp.value, ix.value);
}

async function showEpisode(view, dataset, split, index, id) {
  let ep;
  try {
    ep = await api("/api/episode", id ? { id } : { dataset, split, index });
    dataset = ep.dataset; split = ep.split; index = ep.index;
    document.getElementById("ep-index").value = index;
  } catch (e) {
    if (e.status && e.status < 500) { view.replaceChildren(el("p", { class: "refused", text: "refused: " + e.message })); return; }
    throw e;
  }
  const steps = ep.steps;
  const frameURL = (cam, k) => "/api/episode/frame?" + new URLSearchParams({ dataset, split, index, camera: cam, step: k });
  const slider = el("input", { type: "range", min: 0, max: steps - 1, value: 0, id: "ep-step" });
  const label = el("span", { class: "steplabel" });
  const play = el("button", { type: "button", text: "play" });
  let h = `<div class="cams">`;
  for (const cam of ep.cameras) h += `<figure class="frame" data-camera="${esc(cam)}"><img alt="${esc(cam)}" data-loaded="0" src="${esc(frameURL(cam, 0))}"><figcaption>${esc(cam)}</figcaption></figure>`;
  h += `</div>`;
  const deltas = [...Array(steps).keys()];
  for (const [name, vals] of [["action", ep.action], ["state", ep.state]]) {
    if (!vals || !vals.length) continue;
    h += `<div>${name} over the episode's ${steps} steps</div><div class="charts" data-series="episode-${name}">`;
    for (let d = 0; d < vals[0].length; d++) h += chartHTML("episode-" + name, { values: vals }, { deltas }, d, 240, 60);
    h += `</div>`;
  }
  const content = el("div", { class: "episode-view", "data-episode": ep.id, "data-steps": steps });
  content.innerHTML = h;
  // a cursor on every curve, moved with the step
  for (const g of content.querySelectorAll(".chart svg")) {
    const c = document.createElementNS(SVGNS, "line");
    c.setAttribute("class", "cursor"); c.setAttribute("y1", 0); c.setAttribute("y2", g.getAttribute("height"));
    g.append(c);
  }
  const show = (k) => {
    slider.value = k;
    label.textContent = `step ${k} of ${steps}` + (ep.fps ? ` (${(k / ep.fps).toFixed(2)} s)` : "");
    content.dataset.step = k;
    for (const f of content.querySelectorAll("figure[data-camera]")) {
      const img = f.querySelector("img");
      const src = frameURL(f.dataset.camera, k);
      if (img.getAttribute("src") !== src) { img.dataset.loaded = "0"; img.src = src; }
    }
    for (const g of content.querySelectorAll(".chart svg")) {
      const w = +g.getAttribute("width");
      const x = (3 + (w - 6) * (steps === 1 ? 0.5 : k / (steps - 1))).toFixed(1);
      const c = g.querySelector(".cursor"); c.setAttribute("x1", x); c.setAttribute("x2", x);
    }
  };
  slider.addEventListener("input", () => show(+slider.value));
  let timer = null;
  play.addEventListener("click", () => {
    if (timer) { clearInterval(timer); timer = null; play.textContent = "play"; return; }
    play.textContent = "pause";
    timer = setInterval(() => show((+slider.value + 1) % steps), 1000 / (ep.fps || 10));
  });
  view.replaceChildren(el("p", { text: `${ep.id}: ${steps} steps` + (ep.fps ? ` at ${ep.fps} fps` : "") + (ep.task ? ` — task: ${ep.task}` : "") }),
    el("div", { class: "scrub" }, play, slider, label), content);
  show(0);
  document.body.dataset.episodeImages = String(await imagesSettled(content));
}

// ---- live ----
let lastStats = null;
let benchNames = [];
const rateHistory = [];
function sparkline(vals, w, h) {
  const g = svg("svg", { width: w, height: h });
  const hi = Math.max(1, ...vals);
  const pts = vals.map((v, i) => `${(w * i / Math.max(1, vals.length - 1)).toFixed(1)},${(h - 2 - (h - 4) * v / hi).toFixed(1)}`);
  g.append(svg("polyline", { points: pts.join(" "), fill: "none", stroke: "#4878d0" }));
  return g;
}
function meter(frac) {
  const m = el("span", { class: "meter" });
  const b = el("span", { class: "bar" }); b.style.width = Math.min(240, 240 * frac) + "px";
  m.append(b); return m;
}
async function renderLive() {
  const st = await api("/api/stats", { rank: state.rank });
  const total = Object.values(st.samples_per_dataset || {}).reduce((a, b) => a + b, 0);
  let rate = null;
  if (lastStats && st.uptime_s > lastStats.uptime_s) rate = (total - lastStats.total) / (st.uptime_s - lastStats.uptime_s);
  lastStats = { total, uptime_s: st.uptime_s };
  if (rate !== null) { rateHistory.push(rate); if (rateHistory.length > 120) rateHistory.shift(); }
  const rl = st.read_latency || {}, bl = st.build_latency || {};
  const mem = st.memory || {};
  const rows = [
    ["samples/s", rate === null ? "…" : rate.toFixed(1), rateHistory.length > 1 ? sparkline(rateHistory, 240, 30) : null, "rate"],
    ["samples built", String(total), null, "samples"],
    ["read latency", `p50 ${ms(rl.p50_s || 0)}, p90 ${ms(rl.p90_s || 0)}, p99 ${ms(rl.p99_s || 0)}, max ${ms(rl.max_s || 0)} (${rl.count || 0} reads)`, null, "read_latency"],
    ["build latency", `p50 ${ms(bl.p50_s || 0)}, p90 ${ms(bl.p90_s || 0)}, p99 ${ms(bl.p99_s || 0)} (${bl.count || 0} builds)`, null, "build_latency"],
    ["RAM cache", `${pct(st.ram_cache ? st.ram_cache.hit_rate : 0)} hits (${st.ram_cache ? st.ram_cache.hits : 0} of ${st.ram_cache ? st.ram_cache.hits + st.ram_cache.misses : 0})`, null, "ram_cache"],
    ["disk cache", `${pct(st.disk_cache ? st.disk_cache.hit_rate : 0)} hits, ${bytes(st.disk_cache ? st.disk_cache.bytes_written : 0)} written`, null, "disk_cache"],
    ["fetched", bytes(st.fetch ? st.fetch.bytes : 0) + ` (${st.fetch ? st.fetch.retries : 0} retries)`, null, "fetch"],
    ["memory", `${bytes(mem.rss_bytes || 0)} of --mem ${bytes(mem.budget_bytes || 0)} (peak ${bytes(mem.peak_rss_bytes || 0)})`, meter((mem.rss_bytes || 0) / (mem.budget_bytes || 1)), "memory"],
    ["uptime", (st.uptime_s || 0).toFixed(0) + " s", null, "uptime"],
  ];
  const t = el("table", { class: "live" });
  for (const [k, v, extra, key] of rows) t.append(el("tr", { "data-key": key }, el("th", { text: k }), el("td", { text: v }), el("td", {}, extra)));
  const share = el("table", { class: "readshare" }, el("tr", {}, el("th", { text: "dataset" }), el("th", { text: "share of samples" }), el("th", {})));
  for (const [name, v] of Object.entries(st.samples_per_dataset || {}).sort()) {
    share.append(el("tr", { "data-dataset": name, "data-share": total ? v / total : 0 }, el("td", { text: name }), el("td", { class: "num", text: total ? pct(v / total) : "–" }), el("td", {}, meter(total ? v / total : 0))));
  }
  const plots = el("div", { class: "benchplots" });
  for (const name of benchNames) plots.append(el("img", { src: "/api/bench/" + name + "?t=" + Math.round(st.uptime_s || 0), alt: name, "data-plot": name }));
  document.querySelector("#live .body").replaceChildren(t, el("h3", { text: "read share per dataset" }), share,
    benchNames.length ? el("h3", { text: "oxefs bench (--bench DIR)" }) : "", plots);
}

// ---- check ----
async function renderCheck() {
  const body = document.querySelector("#check .body");
  let r;
  try { r = await api("/api/check"); } catch (e) {
    if (e.status === 404) { body.replaceChildren(el("p", { class: "muted", text: e.message })); return; }
    throw e;
  }
  const t = el("table", { class: "check" }, el("tr", {}, ...["dataset", "split", "episodes", "defects", "action autocorrelation", "suggested chunk"].map((h) => el("th", { text: h }))));
  for (const d of r.datasets || []) {
    t.append(el("tr", { "data-dataset": d.name, "data-defects": (d.defects || []).length },
      el("td", { text: d.name }), el("td", { text: d.split || "" }), el("td", { class: "num", text: d.episodes }),
      el("td", { text: (d.defects || []).map((x) => `${x.kind} ${x.episode || x.file || ""}: ${x.detail}`).join("\n") || "none" }),
      el("td", { text: (d.action_autocorrelation || []).slice(0, 10).map((v) => v.toFixed(2)).join(" ") }),
      el("td", { class: "num", text: d.suggested_chunk || "" })));
  }
  body.replaceChildren(t);
}

// ---- wiring ----
function bindForm() {
  const f = document.getElementById("pick");
  document.getElementById("view").value = state.view;
  document.getElementById("n").value = state.n;
  document.getElementById("samples").value = state.samples;
  f.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = new URLSearchParams({ view: document.getElementById("view").value, n: document.getElementById("n").value, samples: document.getElementById("samples").value });
    const r = document.getElementById("rank").value;
    if (r !== "") q.set("rank", r);
    location.search = q.toString();
  });
}

async function loadBenchNames() {
  benchNames = await api("/api/bench");
}

async function main() {
  const t0 = performance.now();
  if (params.get("timing") === "1") console.info("oxefs-view-timing start");
  bindForm();
  await loadBenchNames();
  await Promise.all([renderMix(), renderBatch(), renderEpisodes(), renderLive(), renderCheck()]);
  document.body.dataset.readyMs = (performance.now() - t0).toFixed(0);
  document.body.dataset.ready = "1";
  if (params.get("timing") === "1") console.info("oxefs-view-timing ready");
  if (state.live) setInterval(() => renderLive().catch((e) => reportError("live: " + e.message)), 2000);
}
main().catch((e) => { reportError(e.stack || e.message); document.body.dataset.ready = "error"; });
