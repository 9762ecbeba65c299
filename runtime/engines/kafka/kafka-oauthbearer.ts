import kafkajs from 'kafkajs';
import type { Mechanism } from 'kafkajs';
import { TokenRequestError, type BearerToken } from './kafka-oauth.js';

const SOH = '\u0001';

/**
 * kafkajs' SASL setting for OAUTHBEARER (RFC 7628) with `token` as the source of bearer tokens.
 * Replaces kafkajs' own authenticator, which takes the broker's error challenge (a JSON status
 * such as `{"status":"invalid_token"}`, sent instead of an empty success) for success: the broker
 * then closes the connection and the client reports only "No brokers in the broker pool" after
 * its retries. This one answers the challenge as RFC 7628 §3.2.3 asks (a lone %x01) and throws a
 * KafkaJSSASLAuthenticationError naming the status, which the client does not retry; so does a
 * token endpoint that refuses the credentials (a transient failure is left to the client's retries).
 */
export function oauthBearerMechanism(token: () => Promise<BearerToken>): Mechanism {
  return {
    mechanism: 'oauthbearer',
    authenticationProvider: ({ host, port, saslAuthenticate }) => ({
      authenticate: async () => {
        let value: string;
        try {
          ({ value } = await token());
        } catch (err) {
          // refused credentials stay refused: fail now instead of through the client's retries
          if (err instanceof TokenRequestError && !err.transient)
            throw new SaslAuthenticationError(`SASL OAUTHBEARER: ${err.message}`);
          throw err;
        }
        const challenge = await saslAuthenticate<Buffer>({
          request: { encode: () => bytes(`n,,${SOH}auth=Bearer ${value}${SOH}${SOH}`) },
          response: { decode: unframe, parse: (data) => data },
        });
        if (challenge === undefined || challenge.length === 0) return;
        let status = challenge.toString('utf8');
        try {
          const parsed = JSON.parse(status) as { status?: unknown };
          if (typeof parsed.status === 'string') status = parsed.status;
        } catch {
          // not the JSON RFC 7628 describes: report the bytes as they came
        }
        // the broker fails the exchange once the client acknowledges its error
        await saslAuthenticate({ request: { encode: () => bytes(SOH) } }).catch(() => undefined);
        throw new SaslAuthenticationError(
          `SASL OAUTHBEARER authentication failed: broker ${host}:${port} refused the token (${status})`,
        );
      },
    }),
  };
}

/** The server's SASL bytes from kafkajs' frame (a 32-bit length, -1 for none, then the bytes). */
function unframe(raw: Buffer): Buffer {
  if (raw.length < 4) return raw;
  const length = raw.readInt32BE(0);
  return length <= 0 ? Buffer.alloc(0) : raw.subarray(4, 4 + length);
}

/** kafkajs' non-retriable authentication error; its typings omit the message its constructor takes. */
const SaslAuthenticationError = kafkajs.KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error;

/** A SASL message as kafkajs' SaslAuthenticate request carries it: a 32-bit length, then the bytes. */
function bytes(text: string): Buffer {
  const body = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length);
  return Buffer.concat([length, body]);
}
