import { isIPv4, type AddressInfo, type Server } from 'node:net';
import { InvalidOptionError } from '../core/errors.js';

/** Where a site is served when its spec names no address, and the address every port is chosen on. */
export const DEFAULT_ADDRESS = '127.0.0.1';

/**
 * Checks that `address` is an IPv4 loopback address (127.0.0.0/8): the test web never listens
 * anywhere else. Returns it; throws InvalidOptionError naming the site otherwise.
 */
export function loopbackAddress(host: string, address: string): string {
  if (!isIPv4(address) || !address.startsWith('127.')) {
    throw new InvalidOptionError(
      `site ${host}: address must be an IPv4 loopback address (127.0.0.0/8), got ${JSON.stringify(address)}`,
    );
  }
  return address;
}

/** Resolves when `server` listens on `address:port`; rejects with the listen error (EADDRINUSE…). */
export function listenOn(server: Server, port: number, address: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

// a free port picked on 127.0.0.1 can be taken on another loopback address; rare, so a few more picks
const PORT_PICKS = 5;

/**
 * Listens with a fresh server from `open` on each of `addresses`, all on one port: `port`, or when
 * it is 0 a free one picked on the first address (picked again, up to a few times, when another
 * address has it taken). Resolves with the servers in the order of `addresses` and the port; on
 * failure closes what it opened and rejects with the listen error.
 */
export async function listenEverywhere<S extends Server>(
  open: () => S,
  port: number,
  addresses: readonly string[],
): Promise<{ servers: S[]; port: number }> {
  for (let pick = 1; ; pick++) {
    const servers: S[] = [];
    try {
      let chosen = port;
      for (const address of addresses) {
        const server = open();
        servers.push(server);
        await listenOn(server, chosen, address);
        if (chosen === 0) chosen = (server.address() as AddressInfo).port;
      }
      return { servers, port: chosen };
    } catch (err) {
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
      if (port !== 0 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || pick >= PORT_PICKS) throw err;
    }
  }
}

/**
 * `--resolve` and `--allow-ip` arguments that send a crawler to each site's address: one exact
 * rule per site served away from {@link DEFAULT_ADDRESS} (and a `*.` rule when it serves its
 * subdomains), and one `--allow-ip ADDRESS/32` per such address. Sites on the default address
 * need none beyond the harness's `*.test=127.0.0.1`; the most specific `--resolve` rule wins.
 */
export function crawlerAddressArgs(
  sites: readonly { host: string; subdomains?: boolean; address?: string }[],
): string[] {
  const args: string[] = [];
  const addresses = new Set<string>();
  for (const site of sites) {
    if (site.address === undefined || site.address === DEFAULT_ADDRESS) continue;
    addresses.add(site.address);
    args.push('--resolve', `${site.host}=${site.address}`);
    if (site.subdomains) args.push('--resolve', `*.${site.host}=${site.address}`);
  }
  for (const address of addresses) args.push('--allow-ip', `${address}/32`);
  return args;
}
