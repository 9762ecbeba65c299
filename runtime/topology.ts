import { CrawlError } from '../core/errors.js';
import type { ProcessorSupplier } from './processor.js';
import type { Serde } from '../core/serde.js';
import type { SchemaName } from '../schemas/index.js';
import type { StoreBuilder } from '../state/store-builder.js';

/** What an application id may be: lower-case letters, digits and dashes, starting with a letter. */
export const APPLICATION_ID_PATTERN = /^[a-z][a-z0-9-]*$/;

/** A topic the topology reads or writes. Values are Avro (`schema`) in the Confluent wire format. */
export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  readonly keySerde: Serde<string>;
  readonly schema: SchemaName;
  /** Kafka `cleanup.policy`; changelogs are compacted, everything else deleted by retention. */
  readonly compacted?: boolean;
  /** Largest value in bytes (Kafka `max.message.bytes`). */
  readonly maxMessageBytes?: number;
  /** A public output: never deleted by retention, even once every consumer inside the topology has read it. */
  readonly keep?: boolean;
}

export interface ProcessorOptions {
  /** Records of one task processed at once; > 1 only for processors with no state of their own (the fetcher). */
  readonly concurrency?: number;
  /**
   * When input positions are committed. 'after' (default): a record's position commits with the
   * outputs it caused — exactly once. 'before': the position commits before processing starts —
   * at most once; for processors whose upstream re-issues lost work (a lease that expires).
   */
  readonly commitInputs?: 'before' | 'after';
  /**
   * 'after' only: records of one task handed to the processor before the earlier ones have
   * finished, at most this many at a time (default 1). The processor must apply each record's
   * effects (state, forwards) in the order it received them; the engine advances a position only
   * once every record before it has finished too.
   */
  readonly lookahead?: number;
}

/**
 * How a topology's logical topic names (the ones processors see in `recordMetadata.topic`) map to
 * the names on a Kafka cluster. The Kafka client boundary (kafka-port.ts) applies it both ways;
 * everything above it, processors included, speaks logical names only.
 */
export interface TopicNaming {
  /** The cluster's name of a logical topic; names that are not declared data topics (changelogs, dead letters) pass unchanged. */
  physicalTopic(logical: string): string;
  /** The inverse of `physicalTopic`: the logical name of a cluster topic; other names pass unchanged. */
  logicalTopic(physical: string): string;
}

/** Topic names as they are: the naming of a topology without a prefix, and of tools that read raw topics. */
export const BARE_TOPIC_NAMES: TopicNaming = { physicalTopic: (t) => t, logicalTopic: (t) => t };

export interface TopologyOptions {
  /**
   * Put before every declared data topic's name on the cluster, e.g. `news.` makes `links`
   * `news.links`; '' (default) keeps the bare names. Changelog and dead-letter names carry the
   * application id already and take no prefix.
   */
  readonly topicPrefix?: string;
  /**
   * The total of the memory plan of a process running this topology (`ProcessorContext.memory`),
   * in bytes: the tasks' RocksDB databases and their processors' caches and fixed state are planned
   * inside it. 0 (default): no total; every part is counted and every cache gets what it asks.
   */
  readonly memoryBudgetBytes?: number;
}

export type NodeKind = 'source' | 'processor' | 'sink';

export interface SourceNode {
  kind: 'source';
  name: string;
  topics: string[];
  children: string[];
}
export interface ProcessorNode {
  kind: 'processor';
  name: string;
  supplier: ProcessorSupplier;
  parents: string[];
  children: string[];
  stores: string[];
  options: ProcessorOptions;
}
export interface SinkNode {
  kind: 'sink';
  name: string;
  topic: string;
  parents: string[];
}
export type TopologyNode = SourceNode | ProcessorNode | SinkNode;

/** A connected group of nodes; it runs as one task per partition of its (co-partitioned) source topics. */
export interface Subtopology {
  readonly id: number;
  readonly nodes: readonly TopologyNode[];
  readonly sourceTopics: readonly string[];
  readonly partitions: number;
  readonly stores: readonly StoreBuilder[];
}

/**
 * The dataflow, declared once and run unchanged by any engine: sources read topics, processors
 * transform and keep state, sinks write topics. Validation happens in `build()`, eagerly, with
 * messages that name the node.
 */
export class Topology implements TopicNaming {
  readonly topics = new Map<string, TopicSpec>();
  readonly nodes = new Map<string, TopologyNode>();
  readonly stores = new Map<string, { builder: StoreBuilder; processors: string[] }>();

  readonly topicPrefix: string;
  /** `TopologyOptions.memoryBudgetBytes`; 0: none. */
  readonly memoryBudgetBytes: number;

  constructor(
    readonly applicationId: string,
    options: TopologyOptions = {},
  ) {
    if (!APPLICATION_ID_PATTERN.test(applicationId)) {
      throw new CrawlError(
        'CS_TOPOLOGY',
        `application id must be lower-case letters, digits and dashes, got ${JSON.stringify(applicationId)}`,
      );
    }
    this.topicPrefix = options.topicPrefix ?? '';
    this.memoryBudgetBytes = options.memoryBudgetBytes ?? 0;
    if (!Number.isSafeInteger(this.memoryBudgetBytes) || this.memoryBudgetBytes < 0)
      throw new CrawlError('CS_TOPOLOGY', `memory budget must be whole bytes (0: none), got ${this.memoryBudgetBytes}`);
    if (this.topicPrefix !== '' && !/^[a-z][a-z0-9-]*\.$/.test(this.topicPrefix))
      throw new CrawlError(
        'CS_TOPOLOGY',
        `topic prefix must be lower-case letters, digits and dashes ending in '.', got ${JSON.stringify(this.topicPrefix)}`,
      );
  }

  /** A declared topic's name on the cluster: `<prefix><name>`; any other name unchanged. */
  physicalTopic(logical: string): string {
    return this.topicPrefix !== '' && this.topics.has(logical) ? this.topicPrefix + logical : logical;
  }

  /** The declared topic whose cluster name is `physical`; any other name unchanged. */
  logicalTopic(physical: string): string {
    if (this.topicPrefix === '' || !physical.startsWith(this.topicPrefix)) return physical;
    const logical = physical.slice(this.topicPrefix.length);
    return this.topics.has(logical) ? logical : physical;
  }

  addTopic(spec: TopicSpec): this {
    if (!Number.isInteger(spec.partitions) || spec.partitions < 1) {
      throw new CrawlError(
        'CS_TOPOLOGY',
        `topic ${spec.name} needs a positive whole number of partitions, got ${spec.partitions}`,
      );
    }
    this.topics.set(spec.name, spec);
    return this;
  }

  addSource(name: string, ...topics: string[]): this {
    this.addNode({ kind: 'source', name, topics, children: [] });
    return this;
  }

  addProcessor(name: string, supplier: ProcessorSupplier, parents: string[], options: ProcessorOptions = {}): this {
    this.addNode({ kind: 'processor', name, supplier, parents, children: [], stores: [], options });
    return this;
  }

  addSink(name: string, topic: string, ...parents: string[]): this {
    this.addNode({ kind: 'sink', name, topic, parents });
    return this;
  }

  addStateStore(builder: StoreBuilder, ...processorNames: string[]): this {
    if (this.stores.has(builder.name))
      throw new CrawlError('CS_TOPOLOGY', `state store ${builder.name} is declared twice`);
    this.stores.set(builder.name, { builder, processors: processorNames });
    return this;
  }

  /** The compacted changelog topic of a store: `<app>-<store>-changelog`. */
  changelogTopic(store: string): string {
    return `${this.applicationId}-${store}-changelog`;
  }

  private addNode(node: TopologyNode): void {
    if (this.nodes.has(node.name)) throw new CrawlError('CS_TOPOLOGY', `node ${node.name} is declared twice`);
    this.nodes.set(node.name, node);
  }

  /** Links parents to children, checks every reference and splits the graph into sub-topologies. */
  build(): Subtopology[] {
    for (const node of this.nodes.values()) {
      if (node.kind === 'source') {
        for (const t of node.topics) this.topic(t, `source ${node.name}`);
        continue;
      }
      if (node.kind === 'sink') this.topic(node.topic, `sink ${node.name}`);
      if (node.kind === 'processor') {
        node.children.length = 0;
        node.stores.length = 0;
      }
    }
    for (const node of this.nodes.values()) if (node.kind === 'source') node.children.length = 0;
    for (const node of this.nodes.values()) {
      if (node.kind === 'source') continue;
      if (node.parents.length === 0) throw new CrawlError('CS_TOPOLOGY', `${node.kind} ${node.name} has no parent`);
      for (const p of node.parents) {
        const parent = this.nodes.get(p);
        if (!parent) throw new CrawlError('CS_TOPOLOGY', `${node.kind} ${node.name} names unknown parent ${p}`);
        if (parent.kind === 'sink') throw new CrawlError('CS_TOPOLOGY', `${node.name} cannot read from sink ${p}`);
        parent.children.push(node.name);
      }
    }
    for (const [storeName, { processors }] of this.stores) {
      for (const p of processors) {
        const node = this.nodes.get(p);
        if (!node || node.kind !== 'processor')
          throw new CrawlError('CS_TOPOLOGY', `store ${storeName} is connected to unknown processor ${p}`);
        node.stores.push(storeName);
      }
    }
    return this.components();
  }

  topic(name: string, user = 'topology'): TopicSpec {
    const spec = this.topics.get(name);
    if (!spec) throw new CrawlError('CS_TOPOLOGY', `${user} uses undeclared topic ${name}`);
    return spec;
  }

  private components(): Subtopology[] {
    const seen = new Set<string>();
    const result: Subtopology[] = [];
    for (const start of this.nodes.values()) {
      if (seen.has(start.name)) continue;
      const members: TopologyNode[] = [];
      const stack = [start.name];
      while (stack.length > 0) {
        const name = stack.pop()!;
        if (seen.has(name)) continue;
        seen.add(name);
        const node = this.nodes.get(name)!;
        members.push(node);
        const neighbours =
          node.kind === 'source'
            ? node.children
            : node.kind === 'sink'
              ? node.parents
              : [...node.parents, ...node.children];
        // nodes sharing a store belong together too
        if (node.kind === 'processor') for (const s of node.stores) neighbours.push(...this.stores.get(s)!.processors);
        stack.push(...neighbours);
      }
      const sourceTopics = members.flatMap((n) => (n.kind === 'source' ? n.topics : []));
      if (sourceTopics.length === 0)
        throw new CrawlError('CS_TOPOLOGY', `nodes ${members.map((n) => n.name).join(', ')} have no source`);
      const counts = new Set(sourceTopics.map((t) => this.topic(t).partitions));
      if (counts.size !== 1) {
        throw new CrawlError(
          'CS_TOPOLOGY',
          `source topics ${sourceTopics.join(', ')} of one sub-topology must be co-partitioned (same partition count)`,
        );
      }
      const storeNames = new Set(members.flatMap((n) => (n.kind === 'processor' ? n.stores : [])));
      result.push({
        id: result.length,
        nodes: members.sort((a, b) => order(a.kind) - order(b.kind) || a.name.localeCompare(b.name)),
        sourceTopics,
        partitions: [...counts][0]!,
        stores: [...storeNames].map((s) => this.stores.get(s)!.builder),
      });
    }
    return result.sort((a, b) => a.sourceTopics[0]!.localeCompare(b.sourceTopics[0]!)).map((s, i) => ({ ...s, id: i }));
  }
}

function order(kind: NodeKind): number {
  return kind === 'source' ? 0 : kind === 'processor' ? 1 : 2;
}
