import { gzipSync } from 'node:zlib';
import { parseFeed } from '../processors/parser/feeds/index.js';
import { figure, machineLine } from './machine.js';

// parseFeed on a 50,000-URL sitemap (the protocol's limit), as served plain and as .xml.gz:
// each URL with a lastmod, as most generated sitemaps have. Throughput counts uncompressed bytes.
// CPU time = user + system of this process over ROUNDS parses, after one warm-up parse.
const URLS = 50_000;
const ROUNDS = 5;

function sitemap(): Buffer {
  const parts = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
  ];
  for (let i = 0; i < URLS; i++) {
    const day = String(1 + (i % 28)).padStart(2, '0');
    parts.push(
      `  <url><loc>https://shop.example/catalog/category-${i % 97}/product-${i}.html?ref=sitemap</loc>` +
        `<lastmod>2024-03-${day}T10:${String(i % 60).padStart(2, '0')}:00+00:00</lastmod><changefreq>weekly</changefreq></url>`,
    );
  }
  parts.push('</urlset>');
  return Buffer.from(parts.join('\n'));
}

function measure(label: string, body: Buffer, xmlBytes: number): void {
  const feedUrl = 'https://shop.example/sitemap.xml';
  const first = parseFeed(body, 'application/xml', feedUrl);
  if (first.urls.length !== URLS || first.errorCode !== null)
    throw new Error(`${label}: ${first.urls.length} URLs, ${first.errorCode}`);
  const cpu = process.cpuUsage();
  const t = performance.now();
  for (let i = 0; i < ROUNDS; i++) parseFeed(body, 'application/xml', feedUrl);
  const wallS = (performance.now() - t) / 1000 / ROUNDS;
  const used = process.cpuUsage(cpu);
  const cpuS = (used.user + used.system) / 1e6 / ROUNDS;
  figure(`${label}: CPU per sitemap`, cpuS * 1000, 'ms');
  figure(`${label}: wall per sitemap`, wallS * 1000, 'ms');
  figure(`${label}: throughput`, xmlBytes / 2 ** 20 / cpuS, 'MB/s uncompressed (CPU)');
  figure(`${label}: URLs`, URLS / cpuS, 'URLs/s (CPU)');
}

process.stdout.write(`${machineLine()}\n`);
const xml = sitemap();
const gz = gzipSync(xml);
process.stdout.write(
  `sitemap: ${URLS.toLocaleString('en-US')} URLs, ${(xml.length / 2 ** 20).toFixed(1)} MB plain, ${(gz.length / 2 ** 20).toFixed(2)} MB gzip\n`,
);
measure('plain', xml, xml.length);
measure('gzip', gz, xml.length);
