/**
 * The layering rule of crawlstream, checked by `npm run lint` (the model is Kafka's
 * import-control.xml: think hard about the layering before changing this file).
 *
 *   core ← schemas ← state ← runtime ← processors ← topology ← cli
 *
 * A folder imports only from folders to its left. Beside the chain: `synthetic-web/` (the test
 * web, shipped for `crawlstream demo`) imports only core; `bench/` imports anything shipped;
 * `test/` imports anything. No shipped code imports `test/`. Inside a layer: the three processors
 * share code only through `processors/common/`; the runtime's engines never import each other;
 * the engine-neutral runtime never imports an engine. Each outside library with a door has one.
 */
const LAYERS = ['core', 'schemas', 'state', 'runtime', 'processors', 'topology', 'cli'];
const SHIPPED = [...LAYERS, 'synthetic-web', 'bench'];

const upward = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer}`,
  comment: `${layer}/ may import only ${LAYERS.slice(0, i).join(', ') || 'node and packages'}`,
  severity: 'error',
  from: { path: `^${layer}/` },
  to: { path: `^(${[...LAYERS.slice(i + 1), 'synthetic-web', 'bench', 'test'].join('|')})/` },
}));

/** One file is the only door to each of these libraries. */
const DOORS = {
  '@nxtedition/rocksdb': '^state/rocks\\.ts$',
  kafkajs: '^runtime/engines/kafka/kafka-(port|admin|common|transactions|codecs|oauthbearer)\\.ts$',
  '@kafkajs/confluent-schema-registry': '^runtime/engines/kafka/confluent-registry\\.ts$',
  undici: '^processors/fetcher/(http-client|send-hook)\\.ts$',
  'prom-client': '^core/prometheus\\.ts$',
  '@aws-sdk/client-s3': '^processors/parser/object-store\\.ts$',
  '@aws-sdk/lib-storage': '^processors/parser/object-store\\.ts$',
};

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'a cycle of imports between files',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: 'synthetic-web-leaf',
      comment: 'the synthetic web is a separate program: it may import only core',
      severity: 'error',
      from: { path: '^synthetic-web/' },
      to: { path: `^(${SHIPPED.filter((f) => f !== 'core' && f !== 'synthetic-web').join('|')}|test)/` },
    },
    {
      name: 'shipped-never-imports-test',
      severity: 'error',
      from: { path: `^(${SHIPPED.join('|')})/` },
      to: { path: '^test/' },
    },
    {
      name: 'processors-share-through-common',
      comment: 'fetcher, frontier and parser do not import each other; shared code goes in processors/common/',
      severity: 'error',
      from: { path: '^processors/(fetcher|frontier|parser)/' },
      to: { path: '^processors/(fetcher|frontier|parser)/', pathNot: '^processors/$1/' },
    },
    {
      name: 'common-is-below-the-processors',
      severity: 'error',
      from: { path: '^processors/common/' },
      to: { path: '^processors/(fetcher|frontier|parser)/' },
    },
    {
      name: 'engines-apart',
      comment: 'the embedded and kafka engines do not import each other',
      severity: 'error',
      from: { path: '^runtime/engines/(embedded|kafka)/' },
      to: { path: '^runtime/engines/', pathNot: '^runtime/engines/$1/' },
    },
    {
      name: 'runtime-neutral',
      comment: 'the engine interface and task code never import an engine',
      severity: 'error',
      from: { path: '^runtime/[^/]+\\.ts$' },
      to: { path: '^runtime/engines/' },
    },
    {
      name: 'live-path-without-replay',
      comment: 'the engines and the task code never import the replay tool (what both need is in runtime/)',
      severity: 'error',
      from: { path: '^runtime/(engines/.*|[^/]+\\.ts)$' },
      to: { path: '^runtime/replay/' },
    },
    ...Object.entries(DOORS).map(([pkg, door]) => ({
      name: `one-door-${pkg.replace(/[@/]/g, '-')}`,
      comment: `${pkg} is imported only by ${door}`,
      severity: 'error',
      from: { pathNot: [door, '^test/'] },
      to: { path: `node_modules/${pkg}/` },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|\\.cache)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
