// The dashboard's one script. Every page is built with DOM nodes and text nodes: data from the
// store is never parsed as HTML. Every call is a POST of {op, params} to /ui/api with a JSON
// body and the X-OpenHuman-UI header (the server refuses calls without them).
"use strict";

const view = document.getElementById("view");

// ---- helpers -------------------------------------------------------------------------------

/** Runs one dashboard op; resolves with its result, rejects with the server's sentence. */
async function api(op, params) {
  const resp = await fetch("/ui/api", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-OpenHuman-UI": "1" },
    body: JSON.stringify({ op: op, params: params || {} }),
  });
  let body = null;
  try {
    body = await resp.json();
  } catch (e) {
    throw new Error("the daemon answered " + resp.status + " without JSON");
  }
  if (!resp.ok) throw new Error(body && body.error ? body.error : "HTTP " + resp.status);
  return body.result;
}

/** An element; strings and numbers among the children become text nodes. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  return node;
}

function page(title, ...children) {
  view.replaceChildren(el("h1", {}, title), ...children);
  document.title = title + " · openhuman-mcp";
}

function errorBox(e) {
  return el("p", { class: "error", role: "alert" }, String(e && e.message ? e.message : e));
}

/** Runs `work`, showing its error in `where` instead of failing silently. */
async function guarded(where, work) {
  try {
    await work();
  } catch (e) {
    where.replaceChildren(errorBox(e));
  }
}

function when(ms) {
  if (ms === undefined || ms === null) return "—";
  const d = new Date(ms);
  return isNaN(d) ? "—" : d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

function day(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A date cell: kept on one line. */
function dateCell(ms, label) {
  return el("td", { class: "date", "data-label": label }, when(ms));
}

/** A long value (a path, an id) that wraps where it must, with the whole of it in the title. */
function longText(text) {
  return el("span", { class: "long", title: text }, text);
}

/**
 * A table whose rows become stacked cards on a narrow screen: every cell carries its column's
 * name (`data-label`), which the stylesheet shows in front of it there.
 */
function rowsTable(id, headers, rows) {
  for (const tr of rows) {
    [...tr.children].forEach((td, i) => {
      if (headers[i] && !td.hasAttribute("data-label")) td.setAttribute("data-label", headers[i]);
    });
  }
  return el("table", { id: id, class: "rows" },
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))), el("tbody", {}, rows));
}

/** A snippet whose matched words come wrapped in **…**: the words become <mark> text. */
function highlighted(snippet) {
  const parts = String(snippet || "").split("**");
  return parts.map((p, i) => (i % 2 === 1 ? el("mark", {}, p) : document.createTextNode(p)));
}

function tags(list) {
  return (list || []).map((t) => el("span", { class: "tag" }, "#" + t));
}

function formData(form) {
  return Object.fromEntries(new FormData(form).entries());
}

function isoFromDate(value, endOfDay) {
  if (!value) return undefined;
  return value + (endOfDay ? "T23:59:59Z" : "T00:00:00Z");
}

const DAY_MS = 86400000;

/** The start (UTC ms) of the `bucket` after the one starting at `ms`. */
function nextStart(bucket, ms) {
  const d = new Date(ms);
  if (bucket === "day") return ms + DAY_MS;
  if (bucket === "week") return ms + 7 * DAY_MS;
  if (bucket === "month") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Date.UTC(d.getUTCFullYear() + 1, 0, 1);
}

/** A bucket's name: 2026-12-01 for days and weeks, 2026-12 for months, 2026 for years. */
function bucketName(bucket, ms) {
  const iso = new Date(ms).toISOString();
  if (bucket === "month") return iso.slice(0, 7);
  if (bucket === "year") return iso.slice(0, 4);
  return (bucket === "week" ? "week of " : "") + iso.slice(0, 10);
}

/** The most buckets a chart draws across its width before it scrolls sideways. */
const FIT_BUCKETS = 60;

/**
 * The timeline of `params` (all chunks, or an entity's) per the finest bucket whose count over
 * the data's range fits the chart: {bucket, points}. `want` names a bucket instead.
 */
async function timelineFor(params, want) {
  if (want && want !== "auto") return { bucket: want, points: (await api("timeline", { ...params, bucket: want })).points };
  const get = async (bucket) => ({ bucket: bucket, points: (await api("timeline", { ...params, bucket: bucket })).points });
  const months = await get("month");
  const m = months.points;
  if (!m.length) return { bucket: "day", points: [] };
  const span = nextStart("month", m[m.length - 1].start_ms) - m[0].start_ms;
  if (span <= 100 * DAY_MS) {
    // A few months: the days say where the data really starts and ends.
    const days = await get("day");
    const d = days.points;
    if (d.length && d[d.length - 1].start_ms + DAY_MS - d[0].start_ms <= FIT_BUCKETS * DAY_MS) return days;
  }
  if (span <= FIT_BUCKETS * 7 * DAY_MS) return get("week");
  if (span <= FIT_BUCKETS * 31 * DAY_MS) return months;
  return get("year");
}

/**
 * A bar chart of {start_ms, chunks} points (empty buckets left out), drawn as inline SVG over the
 * data's range, one slot per bucket so gaps show. A slot is never narrower than MIN_SLOT (the
 * chart scrolls sideways instead), and the whole height of a slot takes the click, so a short
 * bar is as easy to hit as a tall one. `onPick(point, slot)` on click.
 */
function barChart(points, bucket, onPick) {
  const box = el("div", { class: "chart-box" });
  let picked = null, drawnFor = -1;
  const draw = () => {
    // Drawn in the box's own pixels, so text keeps its size at any width.
    const fit = Math.max(320, Math.floor(box.clientWidth || 800));
    if (fit === drawnFor) return;
    drawnFor = fit;
    box.setAttribute("data-drawn-for", fit);
    box.replaceChildren(chartSvg(points, bucket, fit, picked, (p, ms) => {
      picked = ms;
      if (onPick) onPick(p);
    }));
  };
  draw();
  // Again once it is laid out, and whenever its width changes.
  new ResizeObserver(draw).observe(box);
  return box;
}

function chartSvg(points, bucket, fitWidth, picked, onPick) {
  const MIN_SLOT = 12, height = 180, pad = 20;
  if (!points.length) {
    const chart = svg("svg", { class: "chart", width: fitWidth, height: height, viewBox: `0 0 ${fitWidth} ${height}`, role: "img" });
    chart.appendChild(svg("text", { x: fitWidth / 2, y: height / 2, "text-anchor": "middle" }, "nothing yet"));
    return chart;
  }
  const counts = new Map(points.map((p) => [p.start_ms, p]));
  const slots = [];
  for (let ms = points[0].start_ms; ms <= points[points.length - 1].start_ms; ms = nextStart(bucket, ms)) slots.push(ms);
  const plot = Math.max(fitWidth - 2 * pad, slots.length * MIN_SLOT);
  const width = plot + 2 * pad;
  const chart = svg("svg", { class: "chart", width: width, height: height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  const slot = plot / slots.length;
  const bar = Math.min(60, Math.max(MIN_SLOT - 4, slot * 0.8));
  const max = Math.max(...points.map((p) => p.chunks));
  slots.forEach((ms, i) => {
    const p = counts.get(ms);
    if (!p) return;
    const x = pad + i * slot;
    const h = Math.max(3, ((height - 2 * pad) * p.chunks) / max);
    const g = svg("g", { class: ms === picked ? "slot picked" : "slot", "data-start": ms, tabindex: 0, role: "button" },
      svg("title", {}, `${bucketName(bucket, ms)}: ${p.chunks} chunk${p.chunks === 1 ? "" : "s"}`),
      svg("rect", { class: "hit", x: x, y: pad, width: slot, height: height - 2 * pad }),
      svg("rect", { class: "bar", x: x + (slot - bar) / 2, y: height - pad - h, width: bar, height: h }));
    const pick = () => {
      for (const other of chart.querySelectorAll("g.slot.picked")) other.classList.remove("picked");
      g.classList.add("picked");
      onPick(p, ms);
    };
    g.addEventListener("click", pick);
    g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); } });
    chart.appendChild(g);
  });
  const label = (ms) => bucketName(bucket, ms).replace("week of ", "");
  chart.appendChild(svg("text", { x: pad, y: height - 8 }, label(slots[0])));
  if (slots.length > 1)
    chart.appendChild(svg("text", { x: width - pad, y: height - 8, "text-anchor": "end" }, label(slots[slots.length - 1])));
  chart.appendChild(svg("text", { x: pad, y: 16 }, `per ${bucket}; most in one: ${max}`));
  return chart;
}

/** What a click on a bar shows: that bucket's chunks, newest first. */
function bucketChunks(bucket, params, picked) {
  return (p) => guarded(picked, async () => {
    const until = nextStart(bucket, p.start_ms);
    const r = await api("browse", { ...params, since_ms: p.start_ms, until_ms: until, k: 50 });
    picked.replaceChildren(
      el("h2", { id: "picked-head" }, `${bucketName(bucket, p.start_ms)}: ${r.total} chunk${r.total === 1 ? "" : "s"}`),
      ...(r.total > r.chunks.length ? [el("p", { class: "meta" }, `the newest ${r.chunks.length} shown`)] : []),
      ...chunkCards(r.chunks));
  });
}

/** Chunks as a list of cards; each opens the chunk. */
function chunkCards(chunks) {
  if (!chunks.length) return [el("p", { class: "meta" }, "No chunks.")];
  return chunks.map((c) =>
    el("div", { class: "card" },
      el("button", { class: "link", onclick: () => openChunk(c.chunk_id) }, c.title || c.chunk_id),
      el("div", { class: "meta" }, `${c.source_kind || ""} · ${when(c.timestamp_ms)}`),
      el("div", {}, c.snippet ? highlighted(c.snippet) : c.preview || ""),
      el("div", {}, tags(c.tags))));
}

// ---- overview ------------------------------------------------------------------------------

/** The landing page: what the memory holds, the newest memories and sources, a search box. */
async function overviewPage() {
  const counts = el("div", { class: "stats", id: "counts" }, el("p", { class: "meta" }, "Counting…"));
  const recent = el("div", { id: "recent-chunks" });
  const sources = el("div", { id: "recent-sources" });
  const said = el("div", {});
  const form = el("form", { class: "filters", id: "quick-search" },
    el("label", {}, "Search your memory", el("input", { name: "query", type: "search", size: 40, required: true })),
    el("button", { class: "primary", type: "submit" }, "Recall"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    searchQuery = formData(form).query;
    location.hash = "#search";
  });
  page("Overview", form, counts, el("h2", {}, "Recent memories"), recent,
    el("h2", {}, "Recent sources"), said, sources, el("p", {}, el("a", { href: "#sources" }, "All sources")));
  const stat = (n, label, href) => el("a", { class: "stat", href: href }, el("strong", {}, String(n)), el("span", {}, label));
  await Promise.all([
    guarded(counts, async () => {
      const s = await api("stats");
      counts.replaceChildren(stat(s.chunks, "chunks", "#timeline"), stat(s.sources, "sources", "#sources"),
        stat(s.entities, "people & topics", "#entities"));
      if (!s.chunks) counts.appendChild(el("p", { class: "meta" },
        "Nothing remembered yet: `openhumand-mcp ingest <folder>`, or a client's memory.store, adds some."));
    }),
    guarded(recent, async () => {
      const r = await api("browse", { k: 6 });
      recent.replaceChildren(...chunkCards(r.chunks));
    }),
    guarded(sources, async () => {
      const r = await api("sources", { limit: 5 });
      sources.replaceChildren(r.sources.length
        ? rowsTable("recent-sources-table", SOURCE_COLUMNS, r.sources.map((s) => sourceRow(s, said)))
        : el("p", { class: "meta" }, "No sources yet."));
    }),
  ]);
}

// ---- search and recall -----------------------------------------------------------------------

/** A query handed over from the overview's search box. */
let searchQuery = "";

function searchPage() {
  const q = searchQuery;
  searchQuery = "";
  const results = el("div", { id: "results" });
  const form = el("form", { class: "filters", id: "search-form" },
    el("label", {}, "Question or keywords", el("input", { name: "query", type: "search", size: 40, value: q, required: true })),
    el("label", {}, "Kind", el("select", { name: "kind" },
      ["", "document", "email", "chat", "note", "learning", "conversation"].map((k) => el("option", { value: k }, k || "any")))),
    el("label", {}, "Tag", el("input", { name: "tag", size: 10 })),
    el("label", {}, "After", el("input", { name: "after", type: "date" })),
    el("label", {}, "Before", el("input", { name: "before", type: "date" })),
    el("button", { class: "primary", type: "submit" }, "Recall"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    runSearch(formData(form), results);
  });
  page("Search and recall", form, results);
  if (q) runSearch({ query: q }, results);
}

async function runSearch(f, results) {
  const filter = {};
  if (f.kind) filter.kinds = [f.kind];
  if (f.tag) filter.tags_any = [f.tag.replace(/^#/, "")];
  if (f.after) filter.observed_after = isoFromDate(f.after, false);
  if (f.before) filter.observed_before = isoFromDate(f.before, true);
  results.replaceChildren(el("p", { class: "meta" }, "Searching…"));
  await guarded(results, async () => {
    const r = await api("recall", { query: f.query, k: 20, filter: filter });
    const head = el("p", { class: "meta" },
      `${r.chunks.length} hit${r.chunks.length === 1 ? "" : "s"}` +
        (r.vector_tier ? ` · vectors: ${r.vector_tier} tier` : " · keywords only") +
        (r.date_range ? ` · read "${r.date_range.text}" as ${r.date_range.from} – ${r.date_range.until}` : ""));
    const forgetSelected = el("button", { id: "forget-selected", disabled: true, onclick: () =>
      goForget([...results.querySelectorAll("input.pick:checked")].map((box) => box.value)) }, "Forget selected…");
    results.replaceChildren(head, ...r.chunks.map(hitCard));
    if (r.chunks.length) results.appendChild(el("p", {}, forgetSelected));
    else results.appendChild(el("p", { id: "no-hits" }, "Nothing matched."));
    results.onchange = () => {
      forgetSelected.disabled = !results.querySelector("input.pick:checked");
    };
  });
}

function hitCard(h) {
  const why = el("div", { class: "why" });
  if (h.bm25_rank) why.appendChild(el("span", { title: "rank among keyword matches" }, `keywords #${h.bm25_rank}`));
  if (h.vector_score !== null && h.vector_score !== undefined)
    why.appendChild(el("span", { title: "cosine similarity to the question" }, `similarity ${h.vector_score.toFixed(2)}`));
  if (h.in_date_range !== undefined) why.appendChild(el("span", {}, h.in_date_range ? "in the date asked" : "outside the date asked"));
  why.appendChild(el("span", { title: "when it happened" }, when(h.timestamp_ms)));
  why.appendChild(el("span", { title: "fused score" }, `score ${Number(h.score).toFixed(3)}`));
  return el("div", { class: "card hit", "data-chunk": h.chunk_id },
    el("input", { type: "checkbox", class: "pick", value: h.chunk_id, "aria-label": "select for forgetting" }), " ",
    el("button", { class: "link open", onclick: () => openChunk(h.chunk_id) }, h.title || h.chunk_id),
    el("div", { class: "meta" }, `${h.source_kind} · ${h.source_ref}`),
    why,
    el("div", { class: "snippet" }, highlighted(h.snippet)),
    el("div", {}, tags(h.tags)));
}

// ---- one chunk in context --------------------------------------------------------------------

async function openChunk(id) {
  location.hash = "#chunk/" + encodeURIComponent(id);
}

async function chunkPage(id) {
  const body = el("div", {});
  page("Chunk", body);
  await guarded(body, async () => {
    const [c, around] = await Promise.all([api("chunk", { chunk_id: id }), api("neighbours", { chunk_id: id, around: 2 })]);
    const ctx = (list) => list.map((n) => el("div", { class: "context" },
      el("button", { class: "link", onclick: () => openChunk(n.chunk_id) }, `#${n.seq_in_source} ${n.title || ""}`),
      el("div", { class: "meta" }, when(n.timestamp_ms)), el("div", { class: "content" }, n.preview)));
    const notes = (c.notes || []).map((n) =>
      el("div", { class: "card note" }, el("div", { class: "content" }, n.text), el("div", { class: "meta" }, `${n.source} · ${when(n.created_at_ms)}`)));
    body.replaceChildren(
      el("h2", {}, c.title || c.chunk_id),
      el("div", { class: "meta" }, `${c.source_kind} · ${when(c.timestamp_ms)} · written by ${c.source} · ${c.token_count} tokens`),
      el("div", { class: "meta" }, "Source: ", longText(`${c.source_ref} (${c.source_id})`)),
      el("div", {}, tags(c.tags)),
      ...ctx(around.before),
      el("div", { class: "card" }, el("div", { class: "content", id: "chunk-content" }, c.content)),
      ...ctx(around.after),
      el("h2", {}, "Notes"),
      ...(notes.length ? notes : [el("p", { class: "meta" }, "No notes.")]),
      el("h2", {}, "Mentions"),
      el("p", {}, (c.entity_ids || []).join(", ") || "—"),
      el("p", {},
        el("button", { class: "danger", id: "forget-chunk", onclick: () => goForget([c.chunk_id]) }, "Forget this chunk…"), " ",
        el("button", { onclick: () => goForget([c.source_id]) }, "Forget its whole source…")));
  });
}

// ---- sources ---------------------------------------------------------------------------------

const SOURCE_COLUMNS = ["Source", "Kind", "Chunks", "Last activity", "Last read", ""];

/** A stored source as a table row; `msg` is where its buttons report. */
function sourceRow(s, msg) {
  const actions = el("td", { class: "actions" },
    el("button", { onclick: () => goForget([s.source_id]) }, "Remove…"));
  if (s.file_path) {
    actions.appendChild(document.createTextNode(" "));
    actions.appendChild(el("button", { class: "reingest", onclick: () => reingest(s.file_path, msg) }, "Re-ingest"));
  }
  return el("tr", {},
    el("td", { class: "source", "data-label": "" }, el("div", {}, longText(s.display_name)),
      el("div", { class: "meta" }, longText(s.file_path || s.source_id))),
    el("td", {}, s.source_kind), el("td", { class: "num" }, s.chunk_count), dateCell(s.last_activity_ms),
    s.file_path ? dateCell(s.synced_at_ms) : el("td", {}, "—"), actions);
}

async function sourcesPage() {
  const rows = [];
  const holder = el("div", {});
  const more = el("button", { hidden: true }, "More");
  const watched = el("div", {});
  const msg = el("div", {});
  let cursor = null;
  page("Sources", msg, el("h2", {}, "Watched folders"), watched, el("h2", {}, "Stored sources"), holder, el("p", {}, more));
  guarded(watched, async () => {
    const s = await api("status");
    const list = (s.status.watch && s.status.watch.sources) || [];
    watched.replaceChildren(...(list.length ? list.map((w) => el("div", { class: "card" },
      el("strong", {}, longText(w.path)), el("div", { class: "meta" },
        `${w.state} · ${w.files} files · last sync ${when(w.last_sync_ms)} · ${w.pending} pending`),
      w.last_error ? el("div", { class: "error" }, "Last error: " + w.last_error) : null))
      : [el("p", { class: "meta" }, "No watched folders ([[memory.sources]] in config.toml).")]));
  });
  async function load() {
    await guarded(msg, async () => {
      const r = await api("sources", cursor ? { limit: 50, cursor: cursor } : { limit: 50 });
      rows.push(...r.sources.map((s) => sourceRow(s, msg)));
      holder.replaceChildren(rowsTable("sources-table", SOURCE_COLUMNS, rows));
      cursor = r.next_cursor || null;
      more.hidden = !cursor;
      msg.replaceChildren(el("p", { class: "meta" }, `${r.total} sources`));
    });
  }
  more.addEventListener("click", load);
  await load();
}

async function reingest(path, msg) {
  msg.replaceChildren(el("p", { class: "meta" }, "Reading " + path + " again…"));
  await guarded(msg, async () => {
    const r = await api("ingest", { paths: [path] });
    msg.replaceChildren(el("p", { class: "ok", id: "reingested" },
      `Read again: ${r.files_ingested ?? 0} file(s) read, ${r.files_unchanged ?? 0} unchanged, ` +
      `${r.chunks_added ?? 0} chunks added, ${r.chunks_removed ?? 0} removed.`),
      ...(r.files_failed || []).map((f) => el("p", { class: "error" }, `${f.path}: ${f.error}`)));
  });
}

// ---- people and topics -----------------------------------------------------------------------

async function entitiesPage() {
  const list = el("div", {});
  const detail = el("div", {});
  const form = el("form", { class: "filters" },
    el("label", {}, "Kind", el("select", { name: "kind" },
      ["", "person", "topic", "org", "email", "handle", "url", "bot"].map((k) => el("option", { value: k }, k || "any")))),
    el("button", { type: "submit" }, "Show"));
  const load = () => guarded(list, async () => {
    const kind = formData(form).kind;
    const r = await api("entities", kind ? { kind: kind, k: 50 } : { k: 50 });
    list.replaceChildren(
      el("p", { class: "meta" }, r.total ? `${r.total} in all; the most mentioned first` : "None yet."),
      rowsTable("entities-table", ["Name", "Id", "Mentions"], r.entities.map((e) => el("tr", {},
        el("td", {}, el("button", { class: "link", onclick: () => showEntity(e, detail) }, e.display_name)),
        el("td", { class: "meta" }, longText(e.entity_id)),
        el("td", {}, `${e.mention_count} mentions in ${e.chunk_count} chunks`)))));
  });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  page("People and topics", form, detail, list);
  await load();
}

async function showEntity(e, detail) {
  detail.replaceChildren(el("p", { class: "meta" }, "Loading…"));
  await guarded(detail, async () => {
    const params = { entity_id: e.entity_id };
    const [t, recent] = await Promise.all([
      timelineFor(params),
      api("browse", { entity_ids: [e.entity_id], k: 10 }),
    ]);
    const picked = el("div", {});
    detail.replaceChildren(el("h2", {}, `${e.display_name}: mentions per ${t.bucket}`),
      barChart(t.points, t.bucket, bucketChunks(t.bucket, { entity_ids: [e.entity_id] }, picked)), picked,
      el("h2", {}, "Latest mentions"), ...chunkCards(recent.chunks));
  });
}

// ---- timeline --------------------------------------------------------------------------------

async function timelinePage() {
  const chart = el("div", {});
  const picked = el("div", { id: "picked" });
  const form = el("form", { class: "filters" },
    el("label", {}, "Per", el("select", { name: "bucket" },
      ["auto", "day", "week", "month", "year"].map((b) => el("option", { value: b }, b === "auto" ? "fit the data" : b)))),
    el("button", { type: "submit" }, "Draw"));
  const draw = () => guarded(chart, async () => {
    const t = await timelineFor({}, formData(form).bucket);
    picked.replaceChildren();
    const total = t.points.reduce((n, p) => n + p.chunks, 0);
    chart.replaceChildren(barChart(t.points, t.bucket, bucketChunks(t.bucket, {}, picked)),
      el("p", { class: "meta" }, `${total} chunks in ${t.points.length} ${t.bucket}s; click a bar for its chunks`));
  });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); draw(); });
  page("Timeline", form, chart, picked);
  await draw();
}

// ---- audit log -------------------------------------------------------------------------------

async function auditPage() {
  const out = el("div", {});
  const form = el("form", { class: "filters" },
    el("label", {}, "Client", el("input", { name: "client", placeholder: "mcp:cursor", size: 14 })),
    el("label", {}, "Tool", el("input", { name: "tool", placeholder: "memory.forget", size: 14 })),
    el("label", {}, "Outcome", el("select", { name: "outcome" },
      el("option", { value: "" }, "any"), el("option", { value: "ok" }, "succeeded"), el("option", { value: "failed" }, "failed"))),
    el("button", { type: "submit" }, "Filter"));
  const load = () => guarded(out, async () => {
    const f = formData(form);
    const params = { limit: 200 };
    if (f.client) params.client = f.client;
    if (f.tool) params.tool = f.tool;
    if (f.outcome === "failed") params.failed = true;
    let rows = (await api("audit", params)).rows;
    if (f.outcome === "ok") rows = rows.filter((r) => r.success);
    // Which client wrote what: the rows shown, counted per client and tool.
    const byClient = new Map();
    for (const r of rows) {
      const tools = byClient.get(r.source) || new Map();
      const n = tools.get(r.tool) || { ok: 0, failed: 0 };
      n[r.success ? "ok" : "failed"] += 1;
      tools.set(r.tool, n);
      byClient.set(r.source, tools);
    }
    const summary = el("table", { id: "audit-by-client" }, el("tbody", {}, [...byClient].map(([client, tools]) =>
      el("tr", {}, el("th", {}, client), el("td", {}, [...tools].map(([tool, n]) =>
        `${tool}: ${n.ok} ok${n.failed ? `, ${n.failed} failed` : ""}`).join(" · "))))));
    out.replaceChildren(el("h2", {}, "Who wrote what"), summary, el("h2", {}, "Rows"),
      el("p", { class: "meta" }, `${rows.length} row${rows.length === 1 ? "" : "s"}, newest first`),
      rowsTable("audit-table", ["When", "Client", "Tool", "Outcome", "What", "Result"], rows.map((r) => el("tr", {},
        dateCell(r.ts_ms), el("td", {}, r.source), el("td", {}, r.tool),
        el("td", { class: r.success ? "ok" : "error" }, r.success ? "ok" : "failed: " + (r.error || "")),
        el("td", { class: "meta" }, longText(JSON.stringify(r.args_summary))),
        el("td", { class: "meta" }, longText(r.result_id || ""))))));
  });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  page("Audit log", form, out);
  await load();
}

// ---- forget ----------------------------------------------------------------------------------

let forgetIds = [];

function goForget(ids) {
  forgetIds = ids;
  if (location.hash === "#forget") route();
  else location.hash = "#forget";
}

async function forgetPage() {
  const preview = el("div", { id: "forget-preview" });
  const ids = el("textarea", { name: "ids", rows: 3, cols: 60, placeholder: "chunk, item or source ids, one per line" });
  ids.value = forgetIds.join("\n");
  const form = el("form", { class: "filters" }, el("label", {}, "What to forget", ids),
    el("button", { type: "submit", id: "forget-preview-button" }, "Show what will be deleted"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); showForget(ids.value, preview); });
  page("Forget", el("p", {}, "Deleting is for good: from the database and every index. Every deletion is written to the audit log."),
    form, preview);
  if (forgetIds.length) await showForget(ids.value, preview);
}

async function showForget(text, preview) {
  const ids = text.split(/\s+/).map((s) => s.trim()).filter(Boolean);
  if (!ids.length) return;
  await guarded(preview, async () => {
    const r = await api("resolve", { ids: ids });
    let chunks = 0, records = 0;
    const parts = r.ids.map((x) => {
      chunks += x.chunk_count;
      records += x.records;
      const what = [];
      if (x.chunk_count) what.push(`${x.chunk_count} chunk(s)`);
      if (x.notes) what.push(`${x.notes} note(s) on them`);
      if (x.records) what.push(`${x.records} record(s)`);
      return el("div", { class: "card" },
        el("strong", {}, x.id), el("span", { class: "meta" }, what.length ? ` — ${what.join(", ")}` : " — nothing has this id"),
        el("ul", {}, (x.chunks || []).map((c) =>
          el("li", {}, el("strong", {}, c.title || c.chunk_id), ` (${c.kind}, ${c.chunk_id}) `, c.preview || ""))),
        x.chunk_count > (x.chunks || []).length ? el("p", { class: "meta" }, `and ${x.chunk_count - x.chunks.length} more`) : null);
    });
    const confirm = el("button", { class: "danger", id: "forget-confirm", disabled: chunks + records === 0 },
      `Delete ${chunks} chunk(s)${records ? ` and ${records} record(s)` : ""} for good`);
    const done = el("div", { id: "forget-result" });
    confirm.addEventListener("click", () => guarded(done, async () => {
      confirm.disabled = true;
      const res = await api("forget", { ids: ids });
      forgetIds = [];
      done.replaceChildren(el("p", { class: "ok" },
        `Deleted: ${(res.deleted || []).join(", ") || "nothing"}` + (res.not_found && res.not_found.length ? `; not found: ${res.not_found.join(", ")}` : "")),
        el("p", {}, el("a", { href: "#audit" }, "See it in the audit log")));
    }));
    preview.replaceChildren(...parts, el("p", {}, confirm), done);
  });
}

// ---- status ----------------------------------------------------------------------------------

async function statusPage() {
  const out = el("div", {});
  page("Status", out);
  await guarded(out, async () => {
    const r = await api("status");
    const s = r.status;
    const rows = [
      ["Version", s.version], ["Up", `${Math.round(s.uptime_ms / 1000)} s`], ["Sessions", s.sessions],
      ["Ready", s.ready ? "yes" : "no"],
    ];
    out.replaceChildren(
      el("div", { class: "card lines", id: "status-lines" }, r.lines.map((l) => el("div", {}, l))),
      el("h2", {}, "Clients connected"),
      (s.clients || []).length
        ? el("table", {}, el("tbody", {}, s.clients.map((c) => el("tr", {}, el("td", {}, c.client), el("td", {}, c.transport), el("td", {}, `${c.sessions} session(s)`)))))
        : el("p", { class: "meta" }, "None."),
      el("h2", {}, "Details"),
      el("table", {}, el("tbody", {}, rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, String(v)))))));
  });
}

// ---- routing ---------------------------------------------------------------------------------

const PAGES = {
  overview: overviewPage, search: searchPage, sources: sourcesPage, entities: entitiesPage, timeline: timelinePage,
  audit: auditPage, forget: forgetPage, status: statusPage,
};

function route() {
  const hash = location.hash.replace(/^#/, "") || "overview";
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.getAttribute("href") === "#" + hash.split("/")[0]);
  if (hash.startsWith("chunk/")) return chunkPage(decodeURIComponent(hash.slice(6)));
  (PAGES[hash] || overviewPage)();
}

window.addEventListener("hashchange", route);
route();
