import { escapeHtml, html, trusted } from "./html.js";

describe("html", () => {
  it("escapes every interpolated string, in text and in attributes", () => {
    const name = `<script>alert("x")</script>&'`;
    expect(html`<p title="${name}">${name}</p>`.value).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</p>',
    );
  });

  it("inserts nested templates and trusted HTML as they are, joins arrays, and drops null, undefined and booleans", () => {
    const items = ["a<b", "c"].map((s) => html`<li>${s}</li>`);
    expect(html`<ul>${items}</ul>${null}${undefined}${false}${true}${0}${trusted("<hr>")}`.value).toBe(
      "<ul><li>a&lt;b</li><li>c</li></ul>0<hr>",
    );
  });

  it("escapes the five characters that matter and nothing else", () => {
    expect(escapeHtml("é ✓ \u0000 & < > \" '")).toBe("é ✓ \u0000 &amp; &lt; &gt; &quot; &#39;");
  });
});
