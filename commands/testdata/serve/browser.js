// Drives decode serve's page in headless Chromium (serve_browser_test.go):
// the tree and transcript render, Approve and Resume work, and the run
// reaches done through the live stream. Screenshots go to SHOTS.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require(process.env.PLAYWRIGHT);

const env = (k) => { if (!process.env[k]) throw new Error("missing " + k); return process.env[k]; };
const url = env("SERVE_URL"), done = env("DONE"), fork = env("FORK"), paused = env("PAUSED"), shots = env("SHOTS");

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "decode-chromium-"));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: env("CHROMIUM"), headless: true, viewport: { width: 1280, height: 860 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const errors = [];
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.setDefaultTimeout(30000);
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("response", (r) => { if (r.status() >= 400) errors.push(r.status() + " " + r.url()); });

    // The token URL sets the cookie and leaves the address bar.
    await page.goto(url);
    if (page.url().includes("token=")) throw new Error("the token stayed in the URL: " + page.url());

    // The fork's tree: the source as root, the fork branching off it.
    await page.goto(new URL("/#" + fork, url).href);
    await page.waitForSelector(`#tree svg a[data-id="${done}"]`);
    await page.waitForSelector(`#tree svg a.cur[data-id="${fork}"]`);
    const edges = await page.locator("#tree svg path").count();
    if (edges !== 1) throw new Error("tree: want 1 edge, got " + edges);
    await page.waitForSelector('#transcript li[data-type="user"]');
    const user = await page.locator('#transcript li[data-type="user"]').first().innerText();
    if (!user.includes("say hello")) throw new Error("transcript: user turn reads " + JSON.stringify(user));
    await page.screenshot({ path: path.join(shots, "tree.png"), fullPage: true });

    // Keyboard: the tree's other node is reachable and opens with Enter.
    await page.focus(`#tree svg a[data-id="${done}"]`);
    await page.keyboard.press("Enter");
    await page.waitForSelector('#transcript li[data-type="assistant"]');
    const answer = await page.locator('#transcript li[data-type="assistant"]').first().innerText();
    if (!answer.includes("Hello.")) throw new Error("transcript: the answer reads " + JSON.stringify(answer));

    // The paused run: its approval at the top, approve, resume, done live.
    await page.click(`#sessions button[data-id="${paused}"]`);
    const approve = page.locator('#pending button[data-action="approve"]');
    await approve.waitFor();
    const call = await page.locator("#pending pre").first().innerText();
    if (!call.includes("rm notes.txt")) throw new Error("pending: the call reads " + JSON.stringify(call));
    await page.screenshot({ path: path.join(shots, "paused.png"), fullPage: true });
    await approve.click();
    await page.waitForSelector('#transcript li[data-type="approval"]');
    await page.click("#resume");
    await page.waitForSelector('#transcript li[data-type="end"] .st-done', { timeout: 60000 });
    const text = await page.locator("#transcript").innerText();
    if (!text.includes("Removed it.")) throw new Error("the resumed run's answer is missing: " + text);
    if (!(await page.locator("#pending").isHidden())) throw new Error("the pending box stayed after the run ended");
    await page.click("#code summary");
    await page.waitForSelector("#diff .del");
    await page.screenshot({ path: path.join(shots, "done.png"), fullPage: true });
    await page.emulateMedia({ colorScheme: "dark" });
    await page.screenshot({ path: path.join(shots, "done-dark.png"), fullPage: true });
    if (errors.length) throw new Error("page errors: " + errors.join("; "));
    console.log("ok");
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
