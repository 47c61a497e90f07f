/** The page kit's escaping: what a page inserts can never become markup or end its script. */
import { assert, describe, it } from "@effect/vitest"
import { html, layout, scriptValue } from "../../src/pages/Kit.js"

describe("page kit", () => {
  it("escapes every inserted value, joins arrays, drops null and false, keeps the kit's own fragments", () => {
    const name = `<img src=x onerror="alert(1)">'&\``
    const fragment = html`<p title="${name}">${name}</p>${[html`<b>${"a<b"}</b>`, "c>d"]}${null}${false}${0}`
    assert.strictEqual(
      fragment.text,
      "<p title=\"&#60;img src=x onerror=&#34;alert(1)&#34;&#62;&#39;&#38;&#96;\">" +
        "&#60;img src=x onerror=&#34;alert(1)&#34;&#62;&#39;&#38;&#96;</p><b>a&#60;b</b>c&#62;d0"
    )
  })

  it("a script value cannot close its script element", () => {
    const value = scriptValue({ returnTo: "/</script><script>alert(1)</script>", line: "\u2028" }).text
    assert.notInclude(value, "</script")
    assert.deepStrictEqual(JSON.parse(value), { returnTo: "/</script><script>alert(1)</script>", line: "\u2028" })
  })

  it("a page carries its style and script under one fresh nonce, and the signed-in user escaped", () => {
    const first = layout({ title: "T<", body: html`<p>x</p>`, apiBase: "http://127.0.0.1:1", signedInAs: "<a>" })
    const second = layout({ title: "T", body: html``, apiBase: "http://127.0.0.1:1" })
    assert.notStrictEqual(first.nonce, second.nonce)
    assert.include(first.html, `<style nonce="${first.nonce}">`)
    assert.include(first.html, `<script nonce="${first.nonce}">`)
    assert.include(first.html, "<title>T&#60; · svc</title>")
    assert.include(first.html, "&#60;a&#62;")
    assert.include(first.html, `<meta name="viewport"`)
  })
})
