import { sha1Digest } from '../common/payload.js';
import {
  type HttpHeaders,
  type MemberSpec,
  type WarcFields,
  gzipMember,
  httpRequestBlock,
  httpResponseHead,
  isCompressedPayload,
  metadataMember,
  newRecordId,
  warcDate,
  warcRecordParts,
} from './warc-records.js';

/** What a response record and its request record (and metadata record) are made of. */
export interface RequestResponseArgs {
  targetUri: string;
  /** Start of the fetch; both records carry it as WARC-Date. */
  date: Date;
  ip?: string;
  /** Raw HTTP request head (request line and headers). */
  requestHeaders: string;
  statusLine: string;
  responseHeaders: HttpHeaders;
  /** Body as received after transfer decoding; content encoding (gzip, br) is kept. */
  payload: Buffer;
  /** `sha1Digest(payload)` when the caller has it already; it is trusted, not recomputed. */
  payloadDigest?: string;
  /**
   * `deflatePayload(payload, gzipLevel)` when the caller made it already (off this thread); it is
   * trusted, not recomputed. Unused for a payload stored as is (compressed already).
   */
  deflatedPayload?: Buffer;
  truncated?: 'length' | 'time';
  /** Fields of a metadata record written right after the request, concurrent to the response (e.g. fetch facts). */
  metadata?: Record<string, string>;
}

/** The record ids of a response, its request and its metadata record (when it has one). */
export interface RequestResponseIds {
  readonly response: string;
  readonly request: string;
  readonly metadata?: string;
}

/** New ids for a response and its request, and its metadata record when `withMetadata`. */
export function newRequestResponseIds(withMetadata: boolean): RequestResponseIds {
  const ids = { response: newRecordId(), request: newRecordId() };
  return withMetadata ? { ...ids, metadata: newRecordId() } : ids;
}

/** What the records hold that does not depend on the file they go to: their digests and HTTP blocks. */
export interface RequestResponseBlocks {
  readonly responseHead: Buffer;
  readonly payloadDigest: string;
  readonly blockDigest: string;
  readonly requestBlock: Buffer;
  readonly requestDigest: string;
}

/** The blocks and digests of `args` (SHA-1 base32; the block digest covers the whole HTTP message stored). Pure. */
export function requestResponseBlocks(args: RequestResponseArgs): RequestResponseBlocks {
  const responseHead = httpResponseHead(args.statusLine, args.responseHeaders, args.payload.length);
  const requestBlock = httpRequestBlock(args.requestHeaders);
  return {
    responseHead,
    payloadDigest: args.payloadDigest ?? sha1Digest(args.payload),
    blockDigest: sha1Digest(responseHead, args.payload),
    requestBlock,
    requestDigest: sha1Digest(requestBlock),
  };
}

/**
 * The records of a response, its request and its metadata (when `args.metadata`), in writing
 * order, naming `warcinfoId`; gzip members of their own at `gzipLevel`. Pure: the same arguments
 * make the same bytes, on any thread.
 */
export function requestResponseMembers(
  args: RequestResponseArgs,
  blocks: RequestResponseBlocks,
  ids: RequestResponseIds,
  warcinfoId: string,
  gzipLevel: number,
): Buffer[] {
  const date = warcDate(args.date);
  const ipField: WarcFields = args.ip === undefined ? [] : [['WARC-IP-Address', args.ip]];
  // the payload is part 2 of the response record: [record head, HTTP head, payload, CRLF CRLF]
  const compressed = isCompressedPayload(args.responseHeaders);
  const deflatedPart = compressed ? undefined : args.deflatedPayload;
  const storedPart = compressed || deflatedPart !== undefined ? 2 : -1;
  const specs: MemberSpec[] = [
    {
      parts: warcRecordParts(
        [
          ['WARC-Type', 'response'],
          ['WARC-Record-ID', ids.response],
          ['WARC-Date', date],
          ['WARC-Target-URI', args.targetUri],
          ...ipField,
          ['WARC-Concurrent-To', ids.request],
          ['WARC-Warcinfo-ID', warcinfoId],
          ['WARC-Payload-Digest', blocks.payloadDigest],
          ['WARC-Block-Digest', blocks.blockDigest],
          ...(args.truncated === undefined ? [] : ([['WARC-Truncated', args.truncated]] as WarcFields)),
          ['Content-Type', 'application/http;msgtype=response'],
        ],
        [blocks.responseHead, args.payload],
      ),
      storedPart,
      ...(deflatedPart === undefined ? {} : { deflatedPart }),
    },
    {
      parts: warcRecordParts(
        [
          ['WARC-Type', 'request'],
          ['WARC-Record-ID', ids.request],
          ['WARC-Date', date],
          ['WARC-Target-URI', args.targetUri],
          ...ipField,
          ['WARC-Concurrent-To', ids.response],
          ['WARC-Warcinfo-ID', warcinfoId],
          ['WARC-Block-Digest', blocks.requestDigest],
          ['Content-Type', 'application/http;msgtype=request'],
        ],
        [blocks.requestBlock],
      ),
    },
  ];
  if (args.metadata !== undefined && ids.metadata !== undefined)
    specs.push(metadataMember(ids.metadata, args.targetUri, date, warcinfoId, args.metadata, ids.response));
  return specs.map((r) => gzipMember(r.parts, gzipLevel, r.storedPart, r.deflatedPart));
}

/**
 * A response, request and metadata record made ahead, off the thread that writes the WARC file
 * (on a parse worker): their gzip members for the file whose warcinfo record is `warcinfoId`.
 * The writer uses the members as they are when its open file is that one, and otherwise builds
 * the records again from their blocks and ids (the digests are not computed twice).
 */
export interface PrebuiltRequestResponse {
  readonly ids: RequestResponseIds;
  readonly warcinfoId: string;
  readonly gzipLevel: number;
  readonly blocks: RequestResponseBlocks;
  readonly members: Buffer[];
}

/** What a thread needs to build a page's records ahead, besides the payload (the body it was given). */
export interface PrebuildSpec {
  readonly args: Omit<RequestResponseArgs, 'payload' | 'deflatedPayload'>;
  readonly ids: RequestResponseIds;
  readonly warcinfoId: string;
  readonly gzipLevel: number;
}

/** The records of `spec` with `payload` (and its deflated form, when made), built on this thread. Pure. */
export function prebuildRequestResponse(
  spec: PrebuildSpec,
  payload: Buffer,
  deflatedPayload?: Buffer,
): PrebuiltRequestResponse {
  const args: RequestResponseArgs = {
    ...spec.args,
    payload,
    ...(deflatedPayload === undefined ? {} : { deflatedPayload }),
  };
  const blocks = requestResponseBlocks(args);
  const members = requestResponseMembers(args, blocks, spec.ids, spec.warcinfoId, spec.gzipLevel);
  return { ids: spec.ids, warcinfoId: spec.warcinfoId, gzipLevel: spec.gzipLevel, blocks, members };
}
