/**
 * The normalization table: each row is a raw URL (optionally relative to `base`) and either the
 * normalized URL or the reason it is refused. Expectations are written by hand from the rules
 * in normalize.ts, not captured from its output.
 */
export interface NormalizeCase {
  raw: string;
  base?: string;
  expect: string | { reject: 'bad-url' | 'unsupported-scheme' | 'too-long' };
  why: string;
}

const BASE = 'http://www.example.com/dir/page.html?x=1#top';
const long = (n: number) => 'a'.repeat(n);

export const NORMALIZE_CASES: NormalizeCase[] = [
  // scheme and host case
  { raw: 'HTTP://www.example.com/', expect: 'http://www.example.com/', why: 'scheme lowercased' },
  { raw: 'HtTpS://www.example.com/', expect: 'https://www.example.com/', why: 'mixed-case scheme lowercased' },
  { raw: 'http://WWW.EXAMPLE.COM/', expect: 'http://www.example.com/', why: 'host lowercased' },
  {
    raw: 'http://Www.Example.Com/Path/File.HTML',
    expect: 'http://www.example.com/Path/File.HTML',
    why: 'path case kept',
  },
  { raw: 'http://example.com/?Q=Value', expect: 'http://example.com/?Q=Value', why: 'query case kept' },
  { raw: 'http://EXAMPLE.com./', expect: 'http://example.com/', why: 'trailing dot of host dropped' },
  { raw: 'http://example.com.:8080/a', expect: 'http://example.com:8080/a', why: 'trailing dot dropped, port kept' },
  { raw: 'http://example.com', expect: 'http://example.com/', why: 'empty path becomes /' },
  { raw: 'https://example.com?a=1', expect: 'https://example.com/?a=1', why: 'empty path before query becomes /' },

  // ports
  { raw: 'http://example.com:80/', expect: 'http://example.com/', why: 'default http port dropped' },
  { raw: 'https://example.com:443/', expect: 'https://example.com/', why: 'default https port dropped' },
  { raw: 'http://example.com:443/', expect: 'http://example.com:443/', why: '443 is not the http default' },
  { raw: 'https://example.com:80/', expect: 'https://example.com:80/', why: '80 is not the https default' },
  { raw: 'http://example.com:8080/', expect: 'http://example.com:8080/', why: 'other ports kept' },
  { raw: 'http://example.com:080/', expect: 'http://example.com/', why: 'leading-zero default port dropped' },
  { raw: 'http://example.com:/x', expect: 'http://example.com/x', why: 'empty port dropped' },
  { raw: 'http://example.com:65536/', expect: { reject: 'bad-url' }, why: 'port out of range' },
  { raw: 'http://example.com:abc/', expect: { reject: 'bad-url' }, why: 'non-numeric port' },

  // fragment and empty query
  { raw: 'http://example.com/a#frag', expect: 'http://example.com/a', why: 'fragment dropped' },
  { raw: 'http://example.com/a#', expect: 'http://example.com/a', why: 'empty fragment dropped' },
  { raw: 'http://example.com/a?b=1#frag?c', expect: 'http://example.com/a?b=1', why: 'fragment after query dropped' },
  { raw: 'http://example.com/a?', expect: 'http://example.com/a', why: 'empty query dropped' },
  { raw: 'http://example.com/a?#x', expect: 'http://example.com/a', why: 'empty query and fragment dropped' },
  { raw: 'http://example.com/a?&&', expect: 'http://example.com/a', why: 'query of empty pairs dropped' },
  { raw: 'http://example.com/a?b=1&&c=2&', expect: 'http://example.com/a?b=1&c=2', why: 'empty pairs dropped' },
  { raw: 'http://example.com/a?c=3&a=1&b=2', expect: 'http://example.com/a?c=3&a=1&b=2', why: 'param order kept' },
  { raw: 'http://example.com/a?a=2&a=1', expect: 'http://example.com/a?a=2&a=1', why: 'repeated params kept in order' },
  { raw: 'http://example.com/a?flag', expect: 'http://example.com/a?flag', why: 'valueless param kept' },
  { raw: 'http://example.com/a?a=&b', expect: 'http://example.com/a?a=&b', why: 'empty value kept' },
  { raw: 'http://example.com/a?q=a+b', expect: 'http://example.com/a?q=a+b', why: 'plus kept' },

  // dot segments
  { raw: 'http://example.com/a/./b', expect: 'http://example.com/a/b', why: 'single dot removed' },
  { raw: 'http://example.com/a/../b', expect: 'http://example.com/b', why: 'double dot removed' },
  { raw: 'http://example.com/a/b/../../c', expect: 'http://example.com/c', why: 'two levels up' },
  { raw: 'http://example.com/../a', expect: 'http://example.com/a', why: 'dot above root clamped' },
  { raw: 'http://example.com/a/b/..', expect: 'http://example.com/a/', why: 'trailing double dot keeps slash' },
  { raw: 'http://example.com/a/.', expect: 'http://example.com/a/', why: 'trailing dot keeps slash' },
  { raw: 'http://example.com/a/%2e%2e/b', expect: 'http://example.com/b', why: 'encoded double dot is a dot segment' },
  {
    raw: 'http://example.com/a/.%2E/b',
    expect: 'http://example.com/b',
    why: 'half-encoded double dot is a dot segment',
  },
  { raw: 'http://example.com/a/%2e/b', expect: 'http://example.com/a/b', why: 'encoded dot is a dot segment' },
  { raw: 'http://example.com/a/..b/c', expect: 'http://example.com/a/..b/c', why: '..b is a name, not a dot segment' },
  { raw: 'http://example.com/a//b', expect: 'http://example.com/a//b', why: 'empty segments kept' },
  { raw: 'http://example.com/a/b/', expect: 'http://example.com/a/b/', why: 'trailing slash kept' },

  // percent-encoding
  { raw: 'http://example.com/%7euser', expect: 'http://example.com/~user', why: 'unreserved tilde decoded' },
  { raw: 'http://example.com/%41%42c', expect: 'http://example.com/ABc', why: 'unreserved letters decoded' },
  {
    raw: 'http://example.com/%2d%2E%5f%30',
    expect: 'http://example.com/-._0',
    why: 'unreserved marks and digits decoded',
  },
  {
    raw: 'http://example.com/a%2fb',
    expect: 'http://example.com/a%2Fb',
    why: 'reserved slash stays encoded, hex uppercased',
  },
  { raw: 'http://example.com/a%3fb', expect: 'http://example.com/a%3Fb', why: 'reserved question mark stays encoded' },
  {
    raw: 'http://example.com/?q=%3d%26',
    expect: 'http://example.com/?q=%3D%26',
    why: 'reserved query chars stay encoded',
  },
  { raw: 'http://example.com/?q=%7e%61', expect: 'http://example.com/?q=~a', why: 'unreserved decoded in query' },
  { raw: 'http://example.com/a%20b', expect: 'http://example.com/a%20b', why: 'encoded space stays encoded' },
  { raw: 'http://example.com/a b', expect: 'http://example.com/a%20b', why: 'raw space encoded in path' },
  { raw: 'http://example.com/?q=a b', expect: 'http://example.com/?q=a%20b', why: 'raw space encoded in query' },
  {
    raw: 'http://example.com/caf\u00e9',
    expect: 'http://example.com/caf%C3%A9',
    why: 'non-ASCII path as UTF-8 escapes',
  },
  {
    raw: 'http://example.com/caf%c3%a9',
    expect: 'http://example.com/caf%C3%A9',
    why: 'lowercase UTF-8 escapes uppercased',
  },
  {
    raw: 'http://example.com/?q=\u00fc',
    expect: 'http://example.com/?q=%C3%BC',
    why: 'non-ASCII query as UTF-8 escapes',
  },
  { raw: 'http://example.com/100%', expect: 'http://example.com/100%', why: 'stray percent kept as browsers send it' },
  { raw: 'http://example.com/%zz', expect: 'http://example.com/%zz', why: 'invalid escape kept' },
  {
    raw: 'http://example.com/a<b>"c"',
    expect: 'http://example.com/a%3Cb%3E%22c%22',
    why: 'unsafe path characters encoded',
  },
  { raw: 'http://example.com/a%2B', expect: 'http://example.com/a%2B', why: 'encoded plus stays encoded' },
  { raw: 'http://example.com/(x)!*', expect: 'http://example.com/(x)!*', why: 'sub-delims kept raw' },
  { raw: 'http://example.com/a;b=c', expect: 'http://example.com/a;b=c', why: 'ordinary path params kept' },

  // session ids
  {
    raw: 'http://example.com/a;jsessionid=0123ABC',
    expect: 'http://example.com/a',
    why: 'jsessionid path param stripped',
  },
  {
    raw: 'http://example.com/a;JSESSIONID=0123ABC?x=1',
    expect: 'http://example.com/a?x=1',
    why: 'path session param case-insensitive',
  },
  {
    raw: 'http://example.com/a;jsessionid=1/b',
    expect: 'http://example.com/a/b',
    why: 'path session param mid-path stripped',
  },
  { raw: 'http://example.com/a;v=1;jsessionid=9', expect: 'http://example.com/a;v=1', why: 'other path params kept' },
  { raw: 'http://example.com/?jsessionid=abc', expect: 'http://example.com/', why: 'jsessionid query param stripped' },
  { raw: 'http://example.com/?PHPSESSID=abc&page=2', expect: 'http://example.com/?page=2', why: 'PHPSESSID stripped' },
  { raw: 'http://example.com/?page=2&sid=abc', expect: 'http://example.com/?page=2', why: 'sid stripped' },
  {
    raw: 'http://example.com/?SessionId=abc&a=b',
    expect: 'http://example.com/?a=b',
    why: 'sessionid stripped case-insensitively',
  },
  {
    raw: 'http://example.com/?ASPSESSIONIDQQGGQGPD=abc&a=b',
    expect: 'http://example.com/?a=b',
    why: 'ASPSESSIONID with suffix stripped',
  },
  {
    raw: 'http://example.com/?cfid=1&cftoken=2&x=3',
    expect: 'http://example.com/?x=3',
    why: 'ColdFusion session stripped',
  },
  { raw: 'http://example.com/?%73id=abc&a=b', expect: 'http://example.com/?a=b', why: 'encoded session name stripped' },
  {
    raw: 'http://example.com/(S(lit3py55t21z5v55vlm25s55))/order.aspx',
    expect: 'http://example.com/order.aspx',
    why: 'ASP.NET cookieless session stripped',
  },
  {
    raw: 'http://example.com/(X(1)S(abc))/a',
    expect: 'http://example.com/a',
    why: 'ASP.NET cookieless multi-token stripped',
  },
  {
    raw: 'http://example.com/x/(S(abc))/a',
    expect: 'http://example.com/x/(S(abc))/a',
    why: 'cookieless marker only stripped as the first segment',
  },
  {
    raw: 'http://example.com/?sidebar=1',
    expect: 'http://example.com/?sidebar=1',
    why: 'param merely starting with sid kept',
  },
  { raw: 'http://example.com/?xsid=1', expect: 'http://example.com/?xsid=1', why: 'param merely ending in sid kept' },

  // tracking
  {
    raw: 'http://example.com/?utm_source=news&utm_medium=email&utm_campaign=x',
    expect: 'http://example.com/',
    why: 'utm params stripped',
  },
  {
    raw: 'http://example.com/?a=1&utm_content=b&c=2',
    expect: 'http://example.com/?a=1&c=2',
    why: 'utm stripped between kept params',
  },
  { raw: 'http://example.com/?UTM_Source=x&a=1', expect: 'http://example.com/?a=1', why: 'utm case-insensitive' },
  { raw: 'http://example.com/?utm_whatever=x', expect: 'http://example.com/', why: 'any utm_ prefix stripped' },
  { raw: 'http://example.com/?gclid=abc&q=1', expect: 'http://example.com/?q=1', why: 'gclid stripped' },
  { raw: 'http://example.com/?fbclid=IwAR0', expect: 'http://example.com/', why: 'fbclid stripped' },
  {
    raw: 'http://example.com/?mc_eid=1&mc_cid=2&p=3',
    expect: 'http://example.com/?p=3',
    why: 'Mailchimp ids stripped',
  },
  {
    raw: 'http://example.com/?msclkid=1&dclid=2',
    expect: 'http://example.com/',
    why: 'Microsoft and DoubleClick ids stripped',
  },
  { raw: 'http://example.com/?_ga=1.2.3&_gl=x', expect: 'http://example.com/', why: 'Google linker params stripped' },
  {
    raw: 'http://example.com/?yclid=1&igshid=2&ttclid=3',
    expect: 'http://example.com/',
    why: 'Yandex, Instagram, TikTok ids stripped',
  },
  {
    raw: 'http://example.com/?_hsenc=1&_hsmi=2&mkt_tok=3',
    expect: 'http://example.com/',
    why: 'HubSpot and Marketo ids stripped',
  },
  { raw: 'http://example.com/?utm=1', expect: 'http://example.com/?utm=1', why: 'bare utm is not a tracking param' },
  {
    raw: 'http://example.com/?x=utm_source',
    expect: 'http://example.com/?x=utm_source',
    why: 'values are never matched',
  },
  {
    raw: 'http://example.com/?utm_source=x#frag',
    expect: 'http://example.com/',
    why: 'tracking and fragment both dropped',
  },

  // whitespace
  { raw: '  http://example.com/a  ', expect: 'http://example.com/a', why: 'outer spaces trimmed' },
  { raw: '\n\thttp://example.com/a\r\n', expect: 'http://example.com/a', why: 'outer control whitespace trimmed' },
  { raw: 'http://exa\nmple.com/a\tb', expect: 'http://example.com/ab', why: 'inner tabs and newlines removed' },
  { raw: '\u00a0http://example.com/\u00a0', expect: 'http://example.com/', why: 'no-break spaces trimmed' },
  { raw: '   ', expect: { reject: 'bad-url' }, why: 'only whitespace' },

  // IDN and IP hosts
  { raw: 'http://m\u00fcnchen.de/', expect: 'http://xn--mnchen-3ya.de/', why: 'IDN to punycode' },
  { raw: 'http://M\u00dcNCHEN.de/', expect: 'http://xn--mnchen-3ya.de/', why: 'IDN case-folded before punycode' },
  { raw: 'http://\u4f8b\u3048.jp/', expect: 'http://xn--r8jz45g.jp/', why: 'Japanese IDN' },
  { raw: 'http://xn--MNCHEN-3YA.de/', expect: 'http://xn--mnchen-3ya.de/', why: 'punycode lowercased' },
  { raw: 'http://%65xample.com/', expect: 'http://example.com/', why: 'percent-encoded host decoded' },
  { raw: 'http://192.168.0.1/', expect: 'http://192.168.0.1/', why: 'IPv4 kept' },
  { raw: 'http://0x7f.1/', expect: 'http://127.0.0.1/', why: 'hex IPv4 canonicalized' },
  { raw: 'http://2130706433/', expect: 'http://127.0.0.1/', why: 'integer IPv4 canonicalized' },
  { raw: 'http://[2001:DB8:0:0:0:0:0:1]/', expect: 'http://[2001:db8::1]/', why: 'IPv6 compressed and lowercased' },
  { raw: 'http://[::1]:8080/a', expect: 'http://[::1]:8080/a', why: 'IPv6 with port' },
  { raw: 'http://[::1/', expect: { reject: 'bad-url' }, why: 'unclosed IPv6 bracket' },
  { raw: 'http://256.1.1.1/', expect: { reject: 'bad-url' }, why: 'IPv4 octet out of range' },

  // userinfo
  { raw: 'http://user:pass@Example.com/', expect: 'http://user:pass@example.com/', why: 'userinfo kept' },
  { raw: 'http://us%65r@example.com/', expect: 'http://user@example.com/', why: 'userinfo escapes normalized' },
  { raw: 'http://@example.com/', expect: 'http://example.com/', why: 'empty userinfo dropped' },

  // relative resolution
  { raw: 'other.html', base: BASE, expect: 'http://www.example.com/dir/other.html', why: 'relative file' },
  { raw: './other.html', base: BASE, expect: 'http://www.example.com/dir/other.html', why: 'dot-relative file' },
  { raw: '../up.html', base: BASE, expect: 'http://www.example.com/up.html', why: 'parent-relative' },
  { raw: '../../../up.html', base: BASE, expect: 'http://www.example.com/up.html', why: 'parent past root clamped' },
  { raw: '/root.html', base: BASE, expect: 'http://www.example.com/root.html', why: 'root-relative' },
  { raw: '//cdn.example.org/x', base: BASE, expect: 'http://cdn.example.org/x', why: 'scheme-relative' },
  {
    raw: '//cdn.example.org/x',
    base: 'https://a.com/',
    expect: 'https://cdn.example.org/x',
    why: 'scheme-relative takes base scheme',
  },
  { raw: '?y=2', base: BASE, expect: 'http://www.example.com/dir/page.html?y=2', why: 'query-only replaces query' },
  {
    raw: '',
    base: BASE,
    expect: 'http://www.example.com/dir/page.html?x=1',
    why: 'empty ref is the base without fragment',
  },
  {
    raw: '#other',
    base: BASE,
    expect: 'http://www.example.com/dir/page.html?x=1',
    why: 'fragment-only ref is the base',
  },
  { raw: 'HTTP://Other.COM', base: BASE, expect: 'http://other.com/', why: 'absolute ref ignores base' },
  {
    raw: 'sub/',
    base: 'http://example.com/dir/',
    expect: 'http://example.com/dir/sub/',
    why: 'relative to directory base',
  },
  {
    raw: 'a?utm_source=x',
    base: BASE,
    expect: 'http://www.example.com/dir/a',
    why: 'tracking stripped after resolution',
  },
  { raw: '\\\\evil.com\\x', base: BASE, expect: 'http://evil.com/x', why: 'backslashes are slashes for http' },
  { raw: 'x', base: 'not a url', expect: { reject: 'bad-url' }, why: 'relative ref with invalid base' },
  { raw: 'page', base: 'mailto:a@b.c', expect: { reject: 'bad-url' }, why: 'relative ref against opaque base' },

  // rejections
  { raw: 'relative/path', expect: { reject: 'bad-url' }, why: 'relative without base' },
  { raw: '', expect: { reject: 'bad-url' }, why: 'empty without base' },
  { raw: 'http://', expect: { reject: 'bad-url' }, why: 'no host' },
  { raw: 'http://exa mple.com/', expect: { reject: 'bad-url' }, why: 'space in host' },
  { raw: 'http://exa<mple.com/', expect: { reject: 'bad-url' }, why: 'forbidden host code point' },
  { raw: 'http://./', expect: { reject: 'bad-url' }, why: 'host of only a dot' },
  { raw: 'ftp://example.com/file', expect: { reject: 'unsupported-scheme' }, why: 'ftp refused' },
  { raw: 'mailto:someone@example.com', expect: { reject: 'unsupported-scheme' }, why: 'mailto refused' },
  { raw: 'javascript:void(0)', expect: { reject: 'unsupported-scheme' }, why: 'javascript refused' },
  { raw: 'data:text/html,<p>x</p>', expect: { reject: 'unsupported-scheme' }, why: 'data refused' },
  { raw: 'file:///etc/passwd', expect: { reject: 'unsupported-scheme' }, why: 'file refused' },
  { raw: 'ws://example.com/', expect: { reject: 'unsupported-scheme' }, why: 'websocket refused' },
  { raw: 'tel:+123', base: BASE, expect: { reject: 'unsupported-scheme' }, why: 'tel refused even with base' },

  // length
  {
    raw: `http://example.com/${long(1981)}`,
    expect: `http://example.com/${long(1981)}`,
    why: 'exactly 2000 characters accepted',
  },
  { raw: `http://example.com/${long(1982)}`, expect: { reject: 'too-long' }, why: '2001 characters refused' },
  {
    raw: `http://example.com/${long(1960)}?utm_source=${long(100)}`,
    expect: `http://example.com/${long(1960)}`,
    why: 'length counted after stripping',
  },
  {
    raw: `http://example.com/${'%7e'.repeat(900)}`,
    expect: `http://example.com/${'~'.repeat(900)}`,
    why: 'length counted after decoding',
  },
  {
    raw: `http://example.com/${'\u00e9'.repeat(400)}`,
    expect: { reject: 'too-long' },
    why: 'length counted after encoding',
  },
];
