"""An independent consumer of crawlstream's page-records: confluent-kafka (librdkafka) reading
committed records only, values decoded by fastavro with the writer schema fetched from the
registry by the id in the Confluent wire format. Prints one JSON object per record.

usage: read_page_records.py BROKERS REGISTRY_URL TOPIC
"""
import io
import json
import struct
import sys
import urllib.request
import uuid

import fastavro
from confluent_kafka import Consumer, TopicPartition

brokers, registry, topic = sys.argv[1], sys.argv[2].rstrip('/'), sys.argv[3]
consumer = Consumer({
    'bootstrap.servers': brokers,
    'group.id': f'independent-reader-{uuid.uuid4()}',
    'isolation.level': 'read_committed',
    'enable.auto.commit': False,
    'auto.offset.reset': 'earliest',
})
partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}

def millis(t):
    # fastavro reads timestamp-millis as an aware datetime
    return int(t.timestamp() * 1000) if hasattr(t, 'timestamp') else t

schemas = {}
done = {p for p, end in ends.items() if end == 0}
empty_polls = 0
while len(done) < len(partitions) and empty_polls < 10:
    msg = consumer.poll(1.0)
    if msg is None:
        empty_polls += 1
        # a partition whose tail is a transaction marker ends one offset early
        for p in partitions:
            pos = consumer.position([TopicPartition(topic, p)])[0].offset
            if pos >= 0 and pos >= ends[p] - 1 and empty_polls >= 3:
                done.add(p)
        continue
    empty_polls = 0
    if msg.error():
        raise SystemExit(f'consume error: {msg.error()}')
    value = msg.value()
    magic, schema_id = struct.unpack('>bI', value[:5])
    if magic != 0:
        raise SystemExit(f'not Confluent wire format at {msg.partition()}@{msg.offset()}')
    if schema_id not in schemas:
        with urllib.request.urlopen(f'{registry}/schemas/ids/{schema_id}') as r:
            schemas[schema_id] = fastavro.parse_schema(json.loads(json.loads(r.read())['schema']))
    record = fastavro.schemaless_reader(io.BytesIO(value[5:]), schemas[schema_id])
    print(json.dumps({'partition': msg.partition(), 'offset': msg.offset(), 'key': msg.key().decode(), 'schemaId': schema_id,
                      'url': record['url'], 'status': record['status'],
                      'warcFile': record.get('warcFile'), 'warcOffset': record.get('warcOffset'),
                      'parserVersion': record.get('parserVersion', 0), 'reparsed': record.get('reparsed', False),
                      'fetchTime': millis(record.get('fetchTime')), 'visit': record.get('visit'),
                      'warcUri': record.get('warcUri'), 'warcLength': record.get('warcLength'),
                      'errorCode': record.get('errorCode'), 'duplicateOf': record.get('duplicateOf'),
                      'notModified': record.get('notModified', False)}))
    if msg.offset() + 1 >= ends[msg.partition()] - 1:
        done.add(msg.partition())
consumer.close()
