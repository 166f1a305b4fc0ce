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

/**
 * A bar chart of {start_ms, chunks} points (buckets `bucketMs` wide, empty ones left out), drawn
 * as inline SVG on a time axis, so gaps show; `onPick(point)` on click.
 */
function barChart(points, bucketMs, onPick) {
  const width = 800, height = 180, pad = 28;
  const chart = svg("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img" });
  if (!points.length) {
    chart.appendChild(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle" }, "nothing yet"));
    return chart;
  }
  const max = Math.max(...points.map((p) => p.chunks));
  const first = points[0].start_ms;
  const span = points[points.length - 1].start_ms + bucketMs - first;
  const plot = width - 2 * pad;
  const bar = Math.min(40, Math.max(1, (plot * bucketMs) / span - 1));
  const x = (ms) => pad + (plot - bar) * (span > bucketMs ? (ms - first) / (span - bucketMs) : 0);
  for (const p of points) {
    const h = Math.max(1, ((height - 2 * pad) * p.chunks) / max);
    const rect = svg("rect", { class: "bar", x: x(p.start_ms), y: height - pad - h, width: bar, height: h });
    rect.appendChild(svg("title", {}, `${day(p.start_ms)}: ${p.chunks} chunk${p.chunks === 1 ? "" : "s"}`));
    if (onPick) rect.addEventListener("click", () => onPick(p));
    chart.appendChild(rect);
  }
  chart.appendChild(svg("text", { x: pad, y: height - 8 }, day(first)));
  chart.appendChild(svg("text", { x: width - pad, y: height - 8, "text-anchor": "end" }, day(points[points.length - 1].start_ms)));
  chart.appendChild(svg("text", { x: pad, y: 16 }, `most in one bucket: ${max}`));
  return chart;
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

// ---- search and recall -----------------------------------------------------------------------

function searchPage(state) {
  const q = (state && state.query) || "";
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
      el("div", { class: "meta" }, "Source: ", c.source_ref, " (", c.source_id, ")"),
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

async function sourcesPage() {
  const table = el("tbody", {});
  const more = el("button", { hidden: true }, "More");
  const watched = el("div", {});
  const msg = el("div", {});
  let cursor = null;
  page("Sources", msg, el("h2", {}, "Watched folders"), watched, el("h2", {}, "Stored sources"),
    el("table", { id: "sources-table" }, el("thead", {}, el("tr", {}, ["Source", "Kind", "Chunks", "Last activity", "Last read", ""].map((h) => el("th", {}, h)))), table),
    el("p", {}, more));
  guarded(watched, async () => {
    const s = await api("status");
    const list = (s.status.watch && s.status.watch.sources) || [];
    watched.replaceChildren(...(list.length ? list.map((w) => el("div", { class: "card" },
      el("strong", {}, w.path), el("div", { class: "meta" },
        `${w.state} · ${w.files} files · last sync ${when(w.last_sync_ms)} · ${w.pending} pending`),
      w.last_error ? el("div", { class: "error" }, "Last error: " + w.last_error) : null))
      : [el("p", { class: "meta" }, "No watched folders ([[memory.sources]] in config.toml).")]));
  });
  async function load() {
    await guarded(msg, async () => {
      const r = await api("sources", cursor ? { limit: 50, cursor: cursor } : { limit: 50 });
      for (const s of r.sources) {
        const actions = el("td", {},
          el("button", { onclick: () => goForget([s.source_id]) }, "Remove…"));
        if (s.file_path) {
          actions.appendChild(document.createTextNode(" "));
          actions.appendChild(el("button", { class: "reingest", onclick: () => reingest(s.file_path, msg) }, "Re-ingest"));
        }
        table.appendChild(el("tr", {},
          el("td", {}, s.display_name, el("div", { class: "meta" }, s.file_path || s.source_id)),
          el("td", {}, s.source_kind), el("td", {}, s.chunk_count), el("td", {}, when(s.last_activity_ms)),
          el("td", {}, s.file_path ? when(s.synced_at_ms) : "—"), actions));
      }
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
      el("table", {}, el("tbody", {}, r.entities.map((e) => el("tr", {},
        el("td", {}, el("button", { class: "link", onclick: () => showEntity(e, detail) }, e.display_name)),
        el("td", { class: "meta" }, e.entity_id),
        el("td", {}, `${e.mention_count} mentions in ${e.chunk_count} chunks`))))));
  });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  page("People and topics", form, detail, list);
  await load();
}

async function showEntity(e, detail) {
  detail.replaceChildren(el("p", { class: "meta" }, "Loading…"));
  await guarded(detail, async () => {
    const [t, recent] = await Promise.all([
      api("timeline", { bucket: "week", entity_id: e.entity_id }),
      api("browse", { entity_ids: [e.entity_id], k: 10 }),
    ]);
    detail.replaceChildren(el("h2", {}, `${e.display_name}: mentions per week`), barChart(t.points, 7 * DAY_MS),
      el("h2", {}, "Latest mentions"), ...chunkCards(recent.chunks));
  });
}

// ---- timeline --------------------------------------------------------------------------------

async function timelinePage() {
  const chart = el("div", {});
  const picked = el("div", {});
  const form = el("form", { class: "filters" },
    el("label", {}, "Per", el("select", { name: "bucket" }, el("option", { value: "day" }, "day"), el("option", { value: "week" }, "week"))),
    el("button", { type: "submit" }, "Draw"));
  const draw = () => guarded(chart, async () => {
    const bucket = formData(form).bucket;
    const t = await api("timeline", { bucket: bucket });
    const width = bucket === "week" ? 7 * DAY_MS : DAY_MS;
    chart.replaceChildren(barChart(t.points, width, (p) => guarded(picked, async () => {
      const r = await api("browse", { since_ms: p.start_ms, until_ms: p.start_ms + width, k: 50 });
      picked.replaceChildren(el("h2", {}, `${day(p.start_ms)}: ${r.total} chunks`), ...chunkCards(r.chunks));
    })), el("p", { class: "meta" }, `${t.points.reduce((n, p) => n + p.chunks, 0)} chunks in ${t.points.length} ${bucket}s; click a bar for its chunks`));
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
      el("table", { id: "audit-table" },
        el("thead", {}, el("tr", {}, ["When", "Client", "Tool", "Outcome", "What", "Result"].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows.map((r) => el("tr", {},
          el("td", {}, when(r.ts_ms)), el("td", {}, r.source), el("td", {}, r.tool),
          el("td", { class: r.success ? "ok" : "error" }, r.success ? "ok" : "failed: " + (r.error || "")),
          el("td", { class: "meta" }, JSON.stringify(r.args_summary)), el("td", { class: "meta" }, r.result_id || ""))))));
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
  search: searchPage, sources: sourcesPage, entities: entitiesPage, timeline: timelinePage,
  audit: auditPage, forget: forgetPage, status: statusPage,
};

function route() {
  const hash = location.hash.replace(/^#/, "") || "search";
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.getAttribute("href") === "#" + hash.split("/")[0]);
  if (hash.startsWith("chunk/")) return chunkPage(decodeURIComponent(hash.slice(6)));
  (PAGES[hash] || searchPage)();
}

window.addEventListener("hashchange", route);
route();
