"""An independent reader of a crawl's WARC files in S3 (boto3 + warcio), for the --warc-store tests.

Reads page records (JSON lines) on stdin; for each with a warcUri, fetches (warcUri, warcOffset,
warcLength) with one ranged GET and reads the WARC record there with warcio. Then lists the bucket
and reads every WARC object whole. Prints one JSON object:
  checked:  page records whose range held a record of their URL
  problems: what did not hold (URL, URI, what was found)
  objects:  {key: size} of every object under the prefix
  recordIds: WARC-Record-IDs seen more than once across all WARC objects (a file stored twice)
  records:  WARC records read in all objects
Endpoint and credentials come from the environment (CRAWLSTREAM_S3_SERVER, AWS_*).
"""
import io
import json
import os
import sys
from collections import Counter
from urllib.parse import urlparse

import boto3
from botocore.config import Config
from warcio.archiveiterator import ArchiveIterator


def main():
    bucket, prefix = sys.argv[1], sys.argv[2]
    s3 = boto3.client(
        's3',
        endpoint_url=os.environ['CRAWLSTREAM_S3_SERVER'],
        region_name=os.environ.get('AWS_REGION', 'us-east-1'),
        config=Config(s3={'addressing_style': 'path'}),
    )
    checked, problems = 0, []
    for line in sys.stdin:
        if not line.strip():
            continue
        rec = json.loads(line)
        uri = rec.get('warcUri')
        if uri is None:
            problems.append({'url': rec['url'], 'problem': 'no warcUri'})
            continue
        u = urlparse(uri)
        start, length = rec['warcOffset'], rec['warcLength']
        body = s3.get_object(Bucket=u.netloc, Key=u.path.lstrip('/'), Range=f'bytes={start}-{start + length - 1}')['Body'].read()
        if len(body) != length:
            problems.append({'url': rec['url'], 'uri': uri, 'problem': f'{len(body)} bytes for a range of {length}'})
            continue
        records = list(ArchiveIterator(io.BytesIO(body)))
        if len(records) == 0:
            problems.append({'url': rec['url'], 'uri': uri, 'problem': 'no WARC record in the range'})
            continue
        first = records[0]
        target = first.rec_headers.get_header('WARC-Target-URI')
        kind = first.rec_type
        want = 'response' if rec['errorCode'] is None and rec['duplicateOf'] is None and not rec['notModified'] else None
        if target != rec['url'] or (want is not None and kind != want and kind != 'revisit'):
            problems.append({'url': rec['url'], 'uri': uri, 'problem': f'found a {kind} record of {target}'})
            continue
        checked += 1

    objects, ids = {}, Counter()
    records = 0
    for page in s3.get_paginator('list_objects_v2').paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get('Contents', []):
            objects[obj['Key']] = obj['Size']
            if obj['Key'].endswith('.warc.gz'):
                data = s3.get_object(Bucket=bucket, Key=obj['Key'])['Body'].read()
                for r in ArchiveIterator(io.BytesIO(data)):
                    records += 1
                    ids[r.rec_headers.get_header('WARC-Record-ID')] += 1
    repeated = [i for i, n in ids.items() if n > 1]
    print(json.dumps({'checked': checked, 'problems': problems, 'objects': objects, 'recordIds': repeated, 'records': records}))


if __name__ == '__main__':
    main()
