import { renderAnnotationHtml } from "./annotation-html.js";

describe("renderAnnotationHtml", () => {
  it("renders CommonMark with tables, strikethrough and links found in text", () => {
    const html = renderAnnotationHtml(
      "# Results\n\n**3** passed, _1_ ~~flaky~~\n\n| test | time |\n| --- | ---: |\n| a | 1s |\n\nSee https://example.com/report\n",
    );
    expect(html).toContain("<h1>Results</h1>");
    expect(html).toContain("<strong>3</strong> passed, <em>1</em> <s>flaky</s>");
    expect(html).toContain("<th>test</th>");
    expect(html).toContain('<td style="text-align:right">1s</td>');
    expect(html).toContain(
      '<a href="https://example.com/report" rel="nofollow noopener noreferrer">https://example.com/report</a>',
    );
  });

  it("keeps the HTML annotations commonly carry: details, images, artifact links, code with its language", () => {
    const html = renderAnnotationHtml(
      '<details><summary>Logs</summary>\n\n```ruby\nputs 1\n```\n\n</details>\n\n<img src="artifact://coverage.png" alt="coverage" width="200">\n\n[report](artifact://report/index.html)\n',
    );
    expect(html).toContain("<details><summary>Logs</summary>");
    expect(html).toContain('<pre><code class="language-ruby">puts 1\n</code></pre>');
    expect(html).toContain('<img src="artifact://coverage.png" alt="coverage" width="200" />');
    expect(html).toContain('<a href="artifact://report/index.html" rel="nofollow noopener noreferrer">report</a>');
  });

  it("drops scripts with their content, and event handlers, styles and frames", () => {
    const html = renderAnnotationHtml(
      '<script>alert(1)</script><style>body{}</style>\n\n<img src="x.png" onerror="alert(2)" style="position:fixed">\n\n<iframe src="https://evil.example"></iframe><p onclick="alert(3)">text</p>',
    );
    expect(html).not.toMatch(/script|alert|onerror|onclick|style|iframe|body\{\}/);
    expect(html).toContain('<img src="x.png" />');
    expect(html).toContain("<p>text</p>");
  });

  it("never keeps javascript:, data: or protocol-relative URLs, in Markdown or in HTML", () => {
    const html = renderAnnotationHtml(
      '[a](javascript:alert(1)) <a href="JaVaScRiPt:alert(2)">b</a> <a href="data:text/html,x">c</a> <img src="data:image/png;base64,AAAA"> <a href="//evil.example/x">d</a> <a href="vbscript:x">e</a>',
    );
    expect(html).not.toMatch(/href="(javascript|data|vbscript|\/\/)/i);
    expect(html).not.toMatch(/src="data:/);
    expect(html).toContain("b");
  });

  it("keeps no style but a table cell's alignment", () => {
    const html = renderAnnotationHtml(
      '<table><tr><td style="text-align:center;background:url(x)">a</td><td style="text-align:expression(x)">b</td></tr></table>',
    );
    expect(html).toContain('<td style="text-align:center">a</td>');
    expect(html).toContain("<td>b</td>");
  });

  it("keeps only language classes on code, and no classes elsewhere", () => {
    const html = renderAnnotationHtml('<code class="language-go evil">x</code><p class="admin-only">y</p>');
    expect(html).toContain('<code class="language-go">x</code>');
    expect(html).not.toContain("admin-only");
    expect(html).not.toContain("evil");
  });

  it("escapes text that only looks like markup", () => {
    expect(renderAnnotationHtml("1 < 2 & 3 > 2")).toBe("<p>1 &lt; 2 &amp; 3 &gt; 2</p>\n");
  });
});
