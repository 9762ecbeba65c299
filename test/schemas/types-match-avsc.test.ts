import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SCHEMAS = fileURLToPath(new URL('../../../schemas/', import.meta.url));

type AvroType = string | AvroType[] | { type: string; name?: string; [k: string]: unknown };
interface AvroField {
  name: string;
  type: AvroType;
  default?: unknown;
}

/** Every named record and enum of every .avsc file, by name (the same name in two files must agree). */
function avroNamedTypes(): Map<string, { kind: 'record'; fields: AvroField[] } | { kind: 'enum'; symbols: string[] }> {
  const out = new Map<string, { kind: 'record'; fields: AvroField[] } | { kind: 'enum'; symbols: string[] }>();
  const walk = (t: AvroType): void => {
    if (Array.isArray(t)) return t.forEach(walk);
    if (typeof t === 'string') return;
    if (t.type === 'record') {
      const fields = t['fields'] as AvroField[];
      out.set(t.name!, { kind: 'record', fields });
      fields.forEach((f) => walk(f.type));
    } else if (t.type === 'enum') out.set(t.name!, { kind: 'enum', symbols: t['symbols'] as string[] });
    else if (t.type === 'array') walk(t['items'] as AvroType);
    else if (t.type === 'map') walk(t['values'] as AvroType);
  };
  for (const f of readdirSync(SCHEMAS).filter((f) => f.endsWith('.avsc'))) {
    walk(JSON.parse(readFileSync(SCHEMAS + f, 'utf8')) as AvroType);
  }
  return out;
}

/** An Avro type as a normalized string: `string|null`, `number`, `Buffer`, `enum(A,B)`, `Link[]`. */
function describeAvro(t: AvroType): string {
  if (Array.isArray(t)) return t.map(describeAvro).sort().join('|');
  if (typeof t === 'string') {
    const primitive: Record<string, string> = {
      null: 'null',
      boolean: 'boolean',
      int: 'number',
      long: 'number',
      float: 'number',
      double: 'number',
      string: 'string',
      bytes: 'Buffer',
    };
    return primitive[t] ?? t;
  }
  if (t.type === 'array') return `${describeAvro(t['items'] as AvroType)}[]`;
  if (t.type === 'map') return `map<${describeAvro(t['values'] as AvroType)}>`;
  if (t.type === 'fixed') return 'Buffer';
  if (t.type === 'record' || t.type === 'enum') return t.name!;
  return describeAvro(t.type);
}

/** The TypeScript interfaces and aliases of schemas/types.ts, described the same way as Avro types. */
function typescriptShapes(): {
  interfaces: Map<string, Map<string, { type: string; optional: boolean }>>;
  enums: Map<string, string[]>;
} {
  const file = SCHEMAS + 'types.ts';
  const program = ts.createProgram([file], { strict: true, target: ts.ScriptTarget.ES2022, types: ['node'] });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const interfaces = new Map<string, Map<string, { type: string; optional: boolean }>>();
  const enums = new Map<string, string[]>();
  const describe = (type: ts.Type): string => {
    if (type.isUnion()) {
      const parts = type.types.map(describe);
      // a union of string literals named by an alias is an enum; unnamed, it is a constrained string
      const literals = type.types.every((t) => t.isStringLiteral());
      const alias = type.aliasSymbol?.name;
      if (literals) return alias !== undefined && enums.has(alias) ? alias : 'string';
      return [...new Set(parts.map((p) => (p === 'true' || p === 'false' ? 'boolean' : p)))].sort().join('|');
    }
    if (type.flags & ts.TypeFlags.Null) return 'null';
    if (type.flags & ts.TypeFlags.StringLike) return 'string';
    if (type.flags & ts.TypeFlags.NumberLike) return 'number';
    if (type.flags & ts.TypeFlags.BooleanLike) return 'boolean';
    if (checker.isArrayType(type)) return `${describe(checker.getTypeArguments(type as ts.TypeReference)[0]!)}[]`;
    // Record<string, X>: an Avro map of X
    const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
    if (index !== undefined && type.getProperties().length === 0) return `map<${describe(index.type)}>`;
    return type.getSymbol()?.name ?? checker.typeToString(type);
  };
  ts.forEachChild(source, (node) => {
    if (ts.isTypeAliasDeclaration(node)) {
      const type = checker.getTypeAtLocation(node);
      if (type.isUnion() && type.types.every((t) => t.isStringLiteral())) {
        enums.set(
          node.name.text,
          type.types.map((t) => (t as ts.StringLiteralType).value),
        );
      }
    }
  });
  ts.forEachChild(source, (node) => {
    if (!ts.isInterfaceDeclaration(node)) return;
    const fields = new Map<string, { type: string; optional: boolean }>();
    for (const member of node.members) {
      if (!ts.isPropertySignature(member)) continue;
      const symbol = checker.getSymbolAtLocation(member.name)!;
      // an optional property's declared type, without the `undefined` that `?` adds
      const type = checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(symbol, member));
      const withNull = checker.getTypeOfSymbolAtLocation(symbol, member);
      const nullable = withNull.isUnion() && withNull.types.some((t) => t.flags & ts.TypeFlags.Null);
      const base = describe(type);
      const described = nullable && !base.split('|').includes('null') ? `${base}|null` : base;
      fields.set(member.name.getText(source), {
        type: described.split('|').sort().join('|'),
        optional: member.questionToken !== undefined,
      });
    }
    interfaces.set(node.name.text, fields);
  });
  return { interfaces, enums };
}

test('schemas/types.ts declares every Avro record and enum with the same fields, types and symbols', () => {
  const avro = avroNamedTypes();
  const { interfaces, enums } = typescriptShapes();
  const problems: string[] = [];
  for (const [name, def] of avro) {
    if (def.kind === 'enum') {
      const symbols = enums.get(name);
      if (symbols === undefined) problems.push(`enum ${name}: no type alias in types.ts`);
      else if ([...symbols].sort().join() !== [...def.symbols].sort().join())
        problems.push(`enum ${name}: avsc ${def.symbols.join()} vs types.ts ${symbols.join()}`);
      continue;
    }
    const ts = interfaces.get(name);
    if (ts === undefined) {
      problems.push(`record ${name}: no interface in types.ts`);
      continue;
    }
    for (const field of def.fields) {
      const mine = ts.get(field.name);
      if (mine === undefined) problems.push(`${name}.${field.name}: in the avsc, not in types.ts`);
      else {
        if (mine.type !== describeAvro(field.type))
          problems.push(`${name}.${field.name}: avsc ${describeAvro(field.type)} vs types.ts ${mine.type}`);
        if (mine.optional && !('default' in field))
          problems.push(`${name}.${field.name}: optional in types.ts but has no default in the avsc`);
      }
    }
    for (const field of ts.keys()) {
      if (!def.fields.some((f) => f.name === field)) problems.push(`${name}.${field}: in types.ts, not in the avsc`);
    }
  }
  for (const name of interfaces.keys()) {
    if (!avro.has(name)) problems.push(`interface ${name}: types.ts holds only Avro shapes, and no .avsc names it`);
  }
  assert.deepEqual(problems, []);
  assert.ok(avro.size >= 15, `read ${avro.size} named Avro types`);
});
