import { prose, type PageSpec, type SiteSpec } from './sites.js';

/**
 * A seed site of long pages (~12–40 KB of HTML each, distinct text, linked to each other): pages the
 * size of the web's, long enough for the parser to analyse them on its worker threads (the
 * standard web's pages are 1–3 KB and stay on the task's thread).
 */
export function longPagesSite(host = 'long.test', pages = 8): SiteSpec {
  const paths = Array.from({ length: pages }, (_, i) => `/long-${i}.html`);
  const spec: Record<string, PageSpec> = { '/': { title: `${host} home`, links: paths } };
  paths.forEach((p, i) => {
    const paragraphs = Array.from({ length: 4 + 4 * (i % 4) }, (_, k) => `<p>${prose(`${host}${p}#${k}`, 250)}</p>`);
    spec[p] = { title: `${host} ${p}`, links: ['/', paths[(i + 1) % pages]!], html: paragraphs.join('\n') };
  });
  return { host, seed: true, pages: spec };
}
