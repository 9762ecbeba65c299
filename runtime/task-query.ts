import { isCrawlError } from '../core/errors.js';
import { partitionFor } from './partitioner.js';
import type { QueryAnswer, QueryRequest, TaskStatus } from './engine.js';
import type { StreamTask } from './task.js';
import type { Subtopology, Topology } from './topology.js';

/** Where a query goes: the sub-topology running its processor and the partition of its key. */
export type QueryTarget = { readonly sub: Subtopology; readonly partition: number };

/**
 * The sub-topology whose tasks run `request.processor`, and the partition its key falls in: the
 * partition the key's records go to in the sub-topology's (co-partitioned) input topics, by the
 * same partitioner and key serde as every producer. An `unknown` answer when no such processor runs.
 */
export function queryTarget(
  topology: Topology,
  subtopologies: readonly Subtopology[],
  request: QueryRequest,
): QueryTarget | QueryAnswer {
  const sub = subtopologies.find((s) => s.nodes.some((n) => n.kind === 'processor' && n.name === request.processor));
  if (sub === undefined) return { kind: 'unknown', reason: `no processor named ${request.processor}` };
  const keySerde = topology.topic(sub.sourceTopics[0]!).keySerde;
  return { sub, partition: partitionFor(keySerde.serialize(request.key), sub.partitions) };
}

/** Runs the query on `task` (the key's partition's, or undefined when none is open here yet). */
export function answerQuery(task: StreamTask | undefined, partition: number, request: QueryRequest): QueryAnswer {
  if (task === undefined) return { kind: 'unavailable', partition, reason: 'the task is opening' };
  try {
    const answer = task.query(request.processor, request.query, request.key);
    if (answer === undefined)
      return { kind: 'unknown', reason: `processor ${request.processor} has no query ${request.query}` };
    return { kind: 'answered', task: task.name, partition, value: answer.value };
  } catch (err) {
    if (isCrawlError(err) && err.code === 'CS_INTERNAL') return { kind: 'unavailable', partition, reason: err.message };
    throw err;
  }
}

/** A task as `/status` lists it. */
export function statusOf(task: StreamTask): TaskStatus {
  return {
    task: task.name,
    subtopology: task.id.subtopology,
    partition: task.id.partition,
    processors: task.subtopology.nodes.filter((n) => n.kind === 'processor').map((n) => n.name),
    state: task.state,
  };
}
