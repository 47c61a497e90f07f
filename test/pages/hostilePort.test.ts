/**
 * A hostile public port page in a real browser (chromium): a user of organization B, signed in by
 * the sign-in page, opens a public port that organization A's machine serves on svc's own origin.
 * The page tries to read and plant svc's cookies, to make a full_access key and list organizations
 * as the visitor (even knowing the CSRF token), and to register a service worker. Judged from the
 * server (B's keys) and from the browser (its cookies, svc's service workers).
 * The process driver serves the page: the attack is the page in the browser, not the sandbox.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { newPage, step } from "../support/Browser.js"
import { client } from "../support/Http.js"
import { change, eventually, runningMachine, sh } from "../support/Machines.js"
import { codeFrom, latestMailTo } from "../support/SignIn.js"
import { startServer } from "../support/TestServer.js"

/** The attack, run by the page's own script; it writes what it saw into #result as JSON. */
const attack = (csrf: string) => `
const out = {};
const attempt = async (name, run) => {
  try { out[name] = await run(); } catch (e) { out[name] = "threw " + e.name; }
};
const answer = async (reply) => reply.type === "opaque" ? "opaque" : reply.status + " " + await reply.text();
(async () => {
  await attempt("read", () => document.cookie);
  await attempt("plant", () => {
    document.cookie = "svc_session=planted; path=/";
    document.cookie = "svc_csrf=planted; path=/";
    return document.cookie;
  });
  await attempt("createKey", async () => answer(await fetch("/v1/api-keys", {
    method: "POST", credentials: "include",
    headers: { "content-type": "application/json", "x-csrf-token": ${JSON.stringify(csrf)} },
    body: JSON.stringify({ name: "stolen", preset: "full_access" })
  })));
  await attempt("createKeySimple", async () => answer(await fetch("/v1/api-keys", {
    method: "POST", credentials: "include", mode: "no-cors",
    headers: { "content-type": "text/plain" },
    body: JSON.stringify({ name: "stolen-simple", preset: "full_access" })
  })));
  await attempt("organizations", async () => answer(await fetch("/v1/organizations", { credentials: "include" })));
  await attempt("worker", async () => {
    if (!("serviceWorker" in navigator)) return "no serviceWorker";
    await navigator.serviceWorker.register("sw.js", { scope: "/" });
    return "registered";
  });
  document.getElementById("result").textContent = JSON.stringify(out);
})();
`

const app = (csrf: string) =>
  `const http = require("http");
const page = ${
    JSON.stringify(`<!doctype html><title>hostile</title><pre id="result"></pre><script>${attack(csrf)}</script>`)
  };
http.createServer((req, res) => {
  if (req.url.endsWith("/sw.js")) {
    res.writeHead(200, { "content-type": "text/javascript", "service-worker-allowed": "/" });
    return res.end("self.addEventListener('fetch', () => {});");
  }
  res.writeHead(200, { "content-type": "text/html" });
  res.end(page);
}).listen(Number(process.argv[2]), "127.0.0.1");
`

const svcCookies = (cookies: ReadonlyArray<{ name: string; value: string }>) =>
  cookies.filter((cookie) => cookie.name.startsWith("svc_")).map(({ name, value }) => `${name}=${value}`).sort()

describe("hostile port page", () => {
  it.scopedLive(
    "a public port page can neither read nor plant svc's cookies, call svc's API as the visitor, nor install a worker",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const a = yield* server.bootstrap("a@example.com")
        const b = yield* server.bootstrap("b@example.com")
        const apiA = client(server.url, { key: a.api_key })
        const apiB = client(server.url, { key: b.api_key })

        // B signs in through the sign-in page: the cookies carry the attributes svc gives them.
        const { context, page } = yield* newPage()
        page.setDefaultTimeout(90_000)
        yield* step(() => page.goto(`${server.url}/sign-in`))
        yield* step(() => page.getByLabel("Email address", { exact: true }).fill("b@example.com"))
        yield* step(() => page.getByRole("button", { name: "Email me a code" }).click())
        yield* step(() => page.getByLabel("6-digit code").waitFor())
        const code = codeFrom((yield* latestMailTo(server, "b@example.com")).text)!
        yield* step(() => page.getByLabel("6-digit code").fill(code))
        yield* step(() => page.keyboard.press("Enter"))
        yield* step(() => page.waitForURL(`${server.url}/`))
        const before = svcCookies(yield* step(() => context.cookies(server.url)))
        assert.includeMembers(before.map((cookie) => cookie.split("=")[0]), ["svc_session", "svc_csrf"])
        const csrf = before.find((cookie) => cookie.startsWith("svc_csrf="))!.slice("svc_csrf=".length)
        const keysBefore = (yield* apiB("GET", "/v1/api-keys")).body.items.map((key: any) => key.id).sort()

        // A's machine serves the page on a public port, knowing B's CSRF token (the worst case).
        const id = yield* runningMachine(apiA, "hostile")
        const port = 20_000 + Math.floor(Math.random() * 40_000)
        const started = yield* sh(
          apiA,
          id,
          `cat > app.js <<'EOF'\n${app(csrf)}EOF\nnohup node app.js ${port} >/dev/null 2>&1 &`
        )
        assert.strictEqual(started.exec_result.exit_code, 0)
        yield* change(apiA, "POST", `/v1/machines/${id}/ports`, { port, public: true })
        const path = `/v1/machines/${id}/ports/${port}/http/`
        const url = `${server.url}${path}`
        yield* eventually(
          Effect.map(client(server.url)("GET", path), (reply) => reply.status === 200 ? reply : undefined)
        )

        yield* step(() => page.goto(url))
        yield* step(() => page.waitForFunction(`document.getElementById("result").textContent !== ""`))
        const seen = JSON.parse((yield* step(() => page.locator("#result").textContent()))!)

        assert.notMatch(String(seen.read), /svc_/, "the page read no svc cookie")
        assert.notMatch(String(seen.plant), /svc_/, "nor saw one it planted")
        for (const name of ["createKey", "createKeySimple", "organizations"]) {
          assert.notMatch(String(seen[name]), /^2\d\d /, `${name}: ${seen[name]}`)
        }
        assert.notStrictEqual(seen.worker, "registered")

        // From the server: B's keys are what they were.
        const keysAfter = (yield* apiB("GET", "/v1/api-keys")).body.items.map((key: any) => key.id).sort()
        assert.deepStrictEqual(keysAfter, keysBefore)
        // From the browser: svc's cookies unchanged, no worker on svc's origin, still signed in.
        assert.deepStrictEqual(svcCookies(yield* step(() => context.cookies(server.url))), before)
        assert.deepStrictEqual(context.serviceWorkers(), [])
        yield* step(() => page.goto(`${server.url}/`))
        assert.strictEqual(
          yield* step(() => page.evaluate(`navigator.serviceWorker.getRegistrations().then((all) => all.length)`)),
          0
        )
        assert.strictEqual(yield* step(() => page.locator("#who").textContent()), "b@example.com")
      }),
    { timeout: 180_000 }
  )
})
