/** Identifies a task: one per input partition of a sub-topology, e.g. `1_3`. */
export interface TaskId {
  readonly subtopology: number;
  readonly partition: number;
}

export function taskIdString(id: TaskId): string {
  return `${id.subtopology}_${id.partition}`;
}
