import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Parser, Tokenizer } from 'htmlparser2';
import { FAST_TOKENIZER_ACTIVE, FastTokenizer } from '../../../processors/parser/fast-tokenizer.js';
import { extractLinks } from '../../../processors/parser/extract-links.js';
import { prose, renderPage } from '../../../synthetic-web/sites.js';
import { standardWeb } from '../../../synthetic-web/standard-web.js';

/** Every callback htmlparser2 makes, in order, as one list of strings. */
function tokens(html: string, tokenizer: typeof Tokenizer): string[] {
  const out: string[] = [];
  const parser = new Parser(
    {
      onopentag: (name, attrs) => out.push(`<${name} ${JSON.stringify(attrs)}>`),
      onclosetag: (name, implied) => out.push(`</${name}${implied ? ' implied' : ''}>`),
      ontext: (text) => out.push(`text ${JSON.stringify(text)}`),
      oncomment: (text) => out.push(`comment ${JSON.stringify(text)}`),
      onprocessinginstruction: (name, data) => out.push(`pi ${name} ${JSON.stringify(data)}`),
      oncdatastart: () => out.push('cdata'),
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true, Tokenizer: tokenizer },
  );
  parser.write(html);
  parser.end();
  return out;
}

const HOSTILE = [
  '',
  'plain text without markup',
  'text & more &amp; &lt;tag&gt; &eacute;t&eacute; &notin; &notit; &#x41;&#65; &#xZZ; &',
  'ends with an ampersand &',
  'ends with a bracket <',
  '<p>a&amp;b<a href="/x?a=1&amp;b=2&copy=3">l&amp;nk</a> tail &nbsp;&nbsp;end</p>',
  '<title>T &amp; &lt;x&gt;</title><textarea>a &amp; <b> </textarea>',
  '<script>if (a < b && c > d) { x = "</p>"; } // <!-- </script>after &amp;',
  '<style>a > b { content: "&amp;" }</style><p>x</p>',
  '<!-- comment with <a href="/no"> & stuff --><p>after</p><!---->',
  '<![CDATA[ x < y ]]><?php echo 1 ?><!doctype html>',
  '<p>unclosed <b>bold <i>both</p> text & &&& &#;',
  "<a href=/unquoted?x=1&amp;y=2>u</a><a href='single&amp;q'>s</a>",
  '<plaintext><p>not a tag & not an entity',
  '<svg><title>svg title</title><text>x &lt; y</text></svg>',
  'a <3 b << c <<< d < e',
  '&'.repeat(200) + '<p>' + 'x'.repeat(5000) + '&amp;' + 'y'.repeat(5000),
  '<p>' + prose('long text', 3000) + ' &amp; ' + prose('more', 3000) + '</p>',
  '<div>\u00e9\u6771\u4eac &#x1F600; \ud83d\ude00</div>',
];

test('FastTokenizer is in place for this version of htmlparser2', () => {
  assert.equal(FAST_TOKENIZER_ACTIVE, true, 'htmlparser2 changed the methods FastTokenizer overrides');
});

test('FastTokenizer yields exactly the tokens of the stock Tokenizer', () => {
  for (const html of HOSTILE) assert.deepEqual(tokens(html, FastTokenizer), tokens(html, Tokenizer), html.slice(0, 80));
  // and on every page of the test web
  for (const site of standardWeb()) {
    for (const [path, spec] of Object.entries(site.pages)) {
      const body = renderPage(spec, { port: 8080, host: site.host, path, pageHits: 1 });
      const html = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
      assert.deepEqual(tokens(html, FastTokenizer), tokens(html, Tokenizer), `${site.host}${path}`);
    }
  }
});

test('extractLinks gives the same links, text and title with either tokenizer', () => {
  for (const html of HOSTILE) {
    const url = 'http://example.com/dir/page.html';
    assert.deepEqual(extractLinks(html, url), extractLinks(html, url, { stockTokenizer: true }), html.slice(0, 80));
  }
});
