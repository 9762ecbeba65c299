import { isIPv4, isIPv6 } from 'node:net';
import { InvalidOptionError } from '../../../core/errors.js';

/** One bootstrap server: `host` is a DNS name, an IPv4 address, or an IPv6 address without brackets. */
export interface BrokerAddress {
  readonly host: string;
  readonly port: number;
}

// RFC 1123 labels; `_` too, which container networks use in service names
const DNS_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

/**
 * The one parser of `--brokers` (Kafka's bootstrap.servers), used by every command and by
 * KafkaPort: a comma-separated list (or entries already split) of `host:port` or
 * `[IPv6]:port`, blanks around entries and empty entries ignored, at least one entry. Pure and
 * idempotent over its own output (`brokerText`). Throws InvalidOptionError (CS_INVALID_OPTION) naming
 * `option`, the entry and what is wrong with it.
 */
export function parseBrokerList(list: string | readonly string[], option = '--brokers'): BrokerAddress[] {
  const entries = (typeof list === 'string' ? [list] : list)
    .flatMap((e) => e.split(','))
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0)
    throw new InvalidOptionError(`${option} needs at least one host:port, got ${JSON.stringify(list)}`);
  return entries.map((e) => parseBroker(e, option));
}

/** `host:port`, with an IPv6 host in brackets: the form parseBrokerList reads. */
export function brokerText(b: BrokerAddress): string {
  return isIPv6(b.host) ? `[${b.host}]:${b.port}` : `${b.host}:${b.port}`;
}

function parseBroker(entry: string, option: string): BrokerAddress {
  const fail = (why: string): never => {
    throw new InvalidOptionError(`${option}: ${JSON.stringify(entry)} ${why}`);
  };
  if (/\s/.test(entry)) fail('has a blank inside (entries are separated by commas)');
  if (/^[A-Za-z][A-Za-z0-9+._-]*:\/\//.test(entry))
    fail('has a scheme: give host:port (the protocol comes from --kafka-tls and --kafka-sasl-mechanism)');
  let host: string;
  let portText: string;
  if (entry.startsWith('[')) {
    const m = /^\[([^\]]*)\](?::(.*))?$/.exec(entry);
    if (m === null) return fail('is not [IPv6]:port (a bracket is not closed, or text follows it)');
    if (!isIPv6(m[1]!)) return fail(`holds ${JSON.stringify(m[1])} in brackets, which is not an IPv6 address`);
    if (m[2] === undefined) return fail('has no port: give [IPv6]:port');
    host = m[1]!;
    portText = m[2];
  } else {
    if (isIPv6(entry) || (entry.match(/:/g)?.length ?? 0) > 1)
      fail('is an IPv6 address without brackets: give [IPv6]:port, e.g. [::1]:9092');
    const colon = entry.indexOf(':');
    if (colon === -1) return fail('has no port: give host:port');
    host = entry.slice(0, colon);
    portText = entry.slice(colon + 1);
    if (host === '') fail('has no host: give host:port');
    if (!isIPv4(host) && (!DNS_NAME.test(host) || /^[\d.]+$/.test(host)))
      fail(`has host ${JSON.stringify(host)}, which is neither a DNS name nor an IP address`);
  }
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65_535))
    fail(`has port ${JSON.stringify(portText)}: a port is a whole number from 1 to 65535`);
  return { host, port };
}
