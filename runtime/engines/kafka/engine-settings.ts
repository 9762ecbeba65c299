/**
 * The Kafka engine's tunables, each default and least value written once: KafkaEngine and
 * KafkaPort fall back to the defaults when a caller leaves one out, and `run`'s
 * --commit-interval, --session-timeout, --state-cleanup-delay and --standby-replicas (cli/settings.ts) show them and refuse less than the
 * least. Milliseconds.
 */
export const KAFKA_ENGINE_SETTINGS = {
  /** How often each task commits its transaction; below 10 ms commits would be all a task does. */
  commitIntervalMs: { default: 200, min: 10 },
  /** The consumer-group session timeout (a broker refuses one below its group.min.session.timeout.ms). */
  sessionTimeoutMs: { default: 10_000, min: 2_000 },
  /** How long a task directory no task of this member uses stays (Kafka Streams' state.cleanup.delay.ms). */
  stateCleanupDelayMs: { default: 600_000, min: 0 },
  /** Standby copies of each task on other members (Kafka Streams' num.standby.replicas); a count, not ms. */
  standbyReplicas: { default: 0, min: 0 },
} as const;
