// Drives the dashboard in a real headless Chromium (Debian's, never a downloaded one) through
// playwright-core. The Rust test `dashboard` starts the daemon, ingests the fixtures, stores a
// note holding markup and passes, in the environment:
//   OPENHUMAN_TEST_CHROMIUM  the browser executable
//   DASHBOARD_LOGIN          a one-time login link from `openhumand-mcp ui --no-open`
//   DASHBOARD_SHOTS          the folder screenshots go into (per page: NAME.png at 1280 px wide,
//                            NAME-420.png at 420 px)
//   DASHBOARD_REPORT         the file this script writes its findings to (JSON)
// It logs in, sees the overview's counts and recent memories, searches, opens a hit, sees it in
// context with the note shown as text, forgets it and sees it gone, checks that a cross-site
// form post is refused, clicks a timeline bar for its chunks, and visits every page: at 1280 and
// 420 px wide, nothing runs off the side of the screen and no date wraps.
// Exit 0 when every check passed; otherwise it prints what failed and exits 1.
"use strict";

const http = require("http");
const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

const LOGIN = env("DASHBOARD_LOGIN");
const SHOTS = env("DASHBOARD_SHOTS");
const REPORT = env("DASHBOARD_REPORT");
const BASE = new URL(LOGIN).origin;
// Every wait is bounded; a missing element fails the run instead of hanging it.
const WAIT_MS = 15000;

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

/** A page on another origin of this machine whose form asks the dashboard to forget `id`. */
function crossSitePage(target, id) {
  // The classic trick for forging a JSON body with a form: text/plain, the JSON in the name.
  const html = `<!doctype html><html><body>
<form id="f" method="POST" action="${target}/ui/api" enctype="text/plain">
<input name='{"op":"forget","params":{"ids":["${id}"]},"pad":"' value='"}'>
</form></body></html>`;
  return new Promise((resolve) => {
    const server = http.createServer((req, res) => {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end(html);
    });
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 420, height: 900 };

/** Whether anything on the page is wider than the window, and dates that take more than a line. */
async function layout(page) {
  return page.evaluate(() => {
    const wrapped = [...document.querySelectorAll("td.date")].filter((td) => {
      const range = document.createRange();
      range.selectNodeContents(td);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      return lines.size > 1;
    }).map((td) => td.textContent);
    return { scroll: document.documentElement.scrollWidth, inner: window.innerWidth, wrapped: wrapped };
  });
}

/** Screenshots of the page at both widths, checking its layout at each. */
async function shot(page, name) {
  for (const [size, file] of [[WIDE, `${name}.png`], [NARROW, `${name}-420.png`]]) {
    await page.setViewportSize(size);
    const l = await layout(page);
    check(l.scroll <= l.inner, `${name} at ${size.width} px: nothing wider than the window (${l.scroll} > ${l.inner})`);
    check(l.wrapped.length === 0, `${name} at ${size.width} px: dates on one line, got ${JSON.stringify(l.wrapped)}`);
    await page.screenshot({ path: path.join(SHOTS, file), fullPage: true });
  }
  await page.setViewportSize(WIDE);
}

async function main() {
  fs.mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: env("OPENHUMAN_TEST_CHROMIUM"),
    headless: true,
    // Flags that keep Chromium off the network it would otherwise call home to.
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const report = { checks: [] };
  const passed = (what) => report.checks.push(what);
  let page = null;
  try {
    const context = await browser.newContext({ viewport: WIDE });
    page = await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    const scriptErrors = [];
    page.on("pageerror", (e) => scriptErrors.push(String(e)));

    // Without a login the page says how to get one.
    const bare = await page.goto(`${BASE}/ui/`);
    check(bare.status() === 401, `no login: 401, got ${bare.status()}`);
    check((await page.textContent("body")).includes("openhumand-mcp ui"), "no login: the page names `openhumand-mcp ui`");
    passed("without a login the dashboard asks for one");

    // The one-time link logs in and lands on the dashboard; a second use does not work.
    await page.goto(LOGIN);
    check(new URL(page.url()).pathname === "/ui/", `after login: at /ui/, got ${page.url()}`);
    const again = await (await browser.newContext()).newPage();
    const reused = await again.goto(LOGIN);
    check(reused.status() === 403, `a used login link is refused, got ${reused.status()}`);
    await again.close();
    passed("the login link works once");

    // It lands on the overview: counts, the newest memories and sources.
    await page.waitForSelector("#counts .stat");
    await page.waitForSelector("#recent-chunks .card");
    await page.waitForSelector("#recent-sources-table tbody tr");
    const counts = await page.locator("#counts .stat").allTextContents();
    check(counts.length === 3 && counts.every((c) => /^[1-9]\d*\D/.test(c)), `three counts above zero: ${JSON.stringify(counts)}`);
    check(/chunks/.test(counts[0]) && /sources/.test(counts[1]) && /people/.test(counts[2]), `what they count: ${counts}`);
    await shot(page, "overview");
    passed("the overview shows counts, recent memories and sources");

    // Search from the overview: the hit shows why it matched.
    await page.fill("#quick-search input[name=query]", "tomatoes basil");
    await page.click("#quick-search button[type=submit]");
    const hit = page.locator(".hit").first();
    await hit.waitFor();
    const marks = await hit.locator("mark").allTextContents();
    check(marks.some((m) => /tomatoes/i.test(m)), `keyword highlight, got ${JSON.stringify(marks)}`);
    const why = await hit.locator(".why").textContent();
    check(/keywords #1/.test(why) && /similarity/.test(why), `why it matched: ${why}`);
    const chunkId = await hit.getAttribute("data-chunk");
    await shot(page, "search");
    passed("search shows highlights, rank and similarity");

    // Open it: the chunk in context, its note rendered as text.
    await hit.locator("button.open").click();
    await page.waitForSelector("#chunk-content");
    check((await page.textContent("#chunk-content")).includes("Planted tomatoes"), "the chunk's text");
    const note = await page.locator(".note .content").first().textContent();
    check(note.includes("<script>") && note.includes("<img"), `the note shows its markup as text: ${note}`);
    const injected = await page.evaluate(() => ({
      flag: window.__xss === 1,
      imgs: document.querySelectorAll(".note img").length,
      scripts: document.querySelectorAll("#view script").length,
    }));
    check(!injected.flag && injected.imgs === 0 && injected.scripts === 0, `no markup ran: ${JSON.stringify(injected)}`);
    check((await page.locator(".context").count()) >= 1, "a neighbouring chunk is shown");
    await shot(page, "chunk");
    passed("a stored <script> note renders as text");

    // A cross-site form post with the session cookie in the browser is refused.
    // Its origin differs from the dashboard's only by the port: the same site, so the browser
    // sends the SameSite cookie, and only the dashboard's own checks stand in the way.
    const evil = await crossSitePage(BASE, chunkId);
    const attack = await context.newPage();
    await attack.goto(`http://127.0.0.1:${evil.address().port}/`);
    const [answer] = await Promise.all([
      attack.waitForNavigation(),
      attack.evaluate(() => document.getElementById("f").submit()),
    ]);
    check(answer && answer.status() === 403, `cross-site post refused with 403, got ${answer && answer.status()}`);
    await attack.close();
    evil.close();
    passed("a cross-site form post is refused");

    // Forget it (the forged post above did not): see exactly what goes, confirm, and it is gone.
    await page.click("#forget-chunk");
    await page.waitForSelector("#forget-confirm");
    const preview = await page.textContent("#forget-preview");
    check(preview.includes(chunkId) && preview.includes("Planted tomatoes") && preview.includes("1 note(s)"), `the preview names the chunk: ${preview}`);
    await shot(page, "forget");
    await page.click("#forget-confirm");
    await page.waitForSelector("#forget-result .ok");
    check((await page.textContent("#forget-result")).includes("Deleted"), "the forget is reported");
    await page.goto(`${BASE}/ui/#search`);
    await page.fill("input[name=query]", "tomatoes basil");
    await page.click("#search-form button[type=submit]");
    await page.waitForFunction(() => !document.querySelector("#results").textContent.includes("Searching"));
    check((await page.locator(`.hit[data-chunk="${chunkId}"]`).count()) === 0, "the forgotten chunk is gone from search");
    passed("forget, then the hit is gone");

    // The audit log shows who deleted it.
    await page.goto(`${BASE}/ui/#audit`);
    await page.fill("input[name=tool]", "memory.forget");
    await page.click("form.filters button[type=submit]");
    await page.waitForSelector("#audit-table");
    const audit = await page.textContent("#audit-table");
    check(audit.includes("mcp:dashboard") && audit.includes("memory.forget"), `audit row of the forget: ${audit}`);
    const who = await page.textContent("#audit-by-client");
    check(/mcp:dashboard\s*memory\.forget: 1 ok/.test(who), `who wrote what: ${who}`);
    await shot(page, "audit");
    passed("the deletion is in the audit log under mcp:dashboard");

    // The other pages draw without script errors.
    for (const [name, ready] of [
      ["sources", "table tbody tr"],
      ["entities", "table tbody tr"],
      ["timeline", "svg.chart rect.bar"],
      ["status", "#status-lines div"],
    ]) {
      await page.goto(`${BASE}/ui/#${name}`);
      await page.waitForSelector(ready);
      if (name === "sources") {
        await page.locator("#sources-table button.reingest").first().click();
        await page.waitForSelector("#reingested");
        const said = await page.textContent("#reingested");
        check(/1 file\(s\) read|1 unchanged/.test(said), `re-ingest reports the file: ${said}`);
      }
      if (name === "timeline") {
        // The data spans 2001 to now: one bar a year, each wide enough to hit, the old one first,
        // and the whole range on the screen at either width.
        const bars = await page.locator("svg.chart rect.bar").count();
        check(bars >= 2, `a bar for 2001 and one for this year, got ${bars}`);
        for (const size of [NARROW, WIDE]) {
          await page.setViewportSize(size);
          // The chart is drawn again for the new width: wait until it fits the window.
          await page.waitForFunction(() => {
            const box = document.querySelector(".chart-box");
            return box && box.getAttribute("data-drawn-for") === String(box.clientWidth);
          });
          const widths = await page.evaluate(() =>
            [...document.querySelectorAll("svg.chart g.slot")].map((g) => g.getBoundingClientRect().width));
          check(widths.length >= 2 && widths.every((w) => w >= 8), `bars at least 8 px wide at ${size.width} px: ${widths}`);
          const right = await page.evaluate(() => document.querySelector("svg.chart").getBoundingClientRect().right);
          check(right <= size.width, `the chart fits ${size.width} px: its right edge at ${right}`);
        }
        await page.locator("svg.chart g.slot").first().click();
        await page.waitForSelector("#picked .card");
        const head = await page.textContent("#picked-head");
        check(/^2001: [1-9]/.test(head), `the 2001 bar lists its chunks: ${head}`);
        check((await page.textContent("#picked")).includes("Old allotment plans"), "the 2001 chunk is listed");
        report.timeline = head;
      }
      if (name === "entities") {
        await page.locator("table button.link").first().click();
        await page.waitForSelector("svg.chart");
      }
      await shot(page, name);
    }
    report.status_lines = await page.locator("#status-lines div").allTextContents();
    check(scriptErrors.length === 0, `no script errors: ${scriptErrors.join("; ")}`);
    passed("sources, people and topics, timeline (a bar clicked) and status pages draw, at both widths");
    report.ok = true;
  } catch (e) {
    report.ok = false;
    report.error = String(e && e.stack ? e.stack : e);
    // What the page showed when it failed.
    if (page) await shot(page, "failure").catch(() => {});
  } finally {
    await browser.close();
  }
  fs.writeFileSync(REPORT, JSON.stringify(report, null, 2));
  if (!report.ok) {
    process.stderr.write(`${report.error}\n`);
    process.exit(1);
  }
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
