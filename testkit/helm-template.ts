// A strict renderer for the subset of Helm's templates (Go text/template with a
// few of Sprig's functions) that deploy/helm/runledger uses, so a test can read
// the manifests the chart makes where helm cannot be installed.
//
// What it knows: text and {{ actions }} with {{- -}} trimming and comments;
// if / else if / else, range (lists and maps, keys in sorted order, with
// $i, $v :=), with, define and include; variables ($x := ..., $ for the
// template's data); pipelines with parentheses; and the functions in FUNCTIONS.
// Anything else is an error naming the template and the line, never a guess:
// an unknown function or keyword, a missing value (.Values.x where values.yaml
// has no x: Go would print nothing, this says so), a map printed as text.
// Numbers print as Go prints Helm's values (float64): 1000000 as 1e+06. A
// template's integer constants, int's results and range's indexes are ints,
// and what Go refuses of mixing the two (eq, gt, printf %d of a float64) is an
// error here too. toYaml quotes what YAML 1.1 (Kubernetes) would read as
// something else than the string it is, as helm's go-yaml does: "y", "on", "0755".
import fs from "node:fs";
import path from "node:path";
import { parse, parseAllDocuments, stringify } from "yaml";

type Value = unknown;

export class TemplateError extends Error {
  override name = "TemplateError";
}

// ---------------------------------------------------------------------------
// Lexing: text and actions

interface Source {
  template: string;
  line: number;
}

type Piece = { kind: "text"; text: string } | { kind: "action"; body: string; at: Source };

const SPACE = /[ \t\r\n]/;

function splitActions(text: string, template: string): Piece[] {
  const pieces: Piece[] = [];
  let i = 0;
  let trimNext = false;
  const lineAt = (index: number) => text.slice(0, index).split("\n").length;
  while (i < text.length) {
    const open = text.indexOf("{{", i);
    let chunk = open < 0 ? text.slice(i) : text.slice(i, open);
    if (trimNext) chunk = chunk.replace(/^[ \t\r\n]+/, "");
    trimNext = false;
    if (open < 0) {
      pieces.push({ kind: "text", text: chunk });
      break;
    }
    const at = { template, line: lineAt(open) };
    let start = open + 2;
    if (text[start] === "-" && SPACE.test(text[start + 1] ?? "")) {
      chunk = chunk.replace(/[ \t\r\n]+$/, "");
      start += 1;
    }
    pieces.push({ kind: "text", text: chunk });
    // The action ends at the first }} outside a string.
    let j = start;
    let quote: string | null = null;
    for (; j < text.length; j++) {
      const c = text[j]!;
      if (quote) {
        if (c === "\\" && quote === '"') j++;
        else if (c === quote) quote = null;
      } else if (c === '"' || c === "`") quote = c;
      else if (text.startsWith("*/", j) && text.slice(start).trimStart().startsWith("/*")) {
        // A comment may hold anything: it ends at */ followed by }} (or -}}).
        const close = /^\*\/\s*(-\s*)?\}\}/.exec(text.slice(j));
        if (close) {
          j += close[0].length - 2;
          break;
        }
      } else if (text.startsWith("}}", j)) break;
    }
    if (j >= text.length) throw new TemplateError(`${at.template}:${at.line}: unclosed action`);
    let body = text.slice(start, j);
    if (/[ \t\r\n]-$/.test(body)) {
      body = body.slice(0, -1);
      trimNext = true;
    }
    pieces.push({ kind: "action", body: body.trim(), at });
    i = j + 2;
  }
  return pieces;
}

// ---------------------------------------------------------------------------
// Lexing inside an action

type Token =
  | { t: "str"; v: string }
  | { t: "num"; v: number; int: boolean }
  | { t: "ident"; v: string }
  | { t: "field"; v: string[] } // .a.b (or "." alone: [])
  | { t: "var"; v: string; path: string[] } // $x.a.b ($ alone: "$")
  | { t: "("; v?: undefined }
  | { t: ")"; v?: undefined; path: string[] }
  | { t: "|" | ":=" | "=" | ","; v?: undefined };

function lexAction(body: string, at: Source): Token[] {
  const tokens: Token[] = [];
  const fail = (what: string) => new TemplateError(`${at.template}:${at.line}: ${what} in {{ ${body} }}`);
  const fieldPath = (from: number): [string[], number] => {
    const names: string[] = [];
    let k = from;
    while (body[k] === ".") {
      const m = /^\.([A-Za-z_][A-Za-z0-9_]*)/.exec(body.slice(k));
      if (!m) break;
      names.push(m[1]!);
      k += m[0].length;
    }
    return [names, k];
  };
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (SPACE.test(c)) {
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < body.length && body[j] !== '"') j += body[j] === "\\" ? 2 : 1;
      if (j >= body.length) throw fail("unterminated string");
      tokens.push({ t: "str", v: JSON.parse(body.slice(i, j + 1)) as string });
      i = j + 1;
    } else if (c === "`") {
      const j = body.indexOf("`", i + 1);
      if (j < 0) throw fail("unterminated raw string");
      tokens.push({ t: "str", v: body.slice(i + 1, j) });
      i = j + 1;
    } else if (c === "(" || c === "|" || c === ",") {
      tokens.push({ t: c });
      i++;
    } else if (c === ")") {
      const [names, k] = fieldPath(i + 1);
      tokens.push({ t: ")", path: names });
      i = k;
    } else if (body.startsWith(":=", i)) {
      tokens.push({ t: ":=" });
      i += 2;
    } else if (c === "=") {
      tokens.push({ t: "=" });
      i++;
    } else if (c === "$") {
      const m = /^\$[A-Za-z0-9_]*/.exec(body.slice(i))!;
      const [names, k] = fieldPath(i + m[0].length);
      tokens.push({ t: "var", v: m[0], path: names });
      i = k;
    } else if (c === ".") {
      const [names, k] = fieldPath(i);
      if (names.length === 0) {
        if (/[A-Za-z0-9_]/.test(body[i + 1] ?? "")) throw fail("bad field name");
        i++;
      } else i = k;
      tokens.push({ t: "field", v: names });
    } else if (/[-0-9]/.test(c)) {
      const m = /^-?\d+(\.\d+)?/.exec(body.slice(i));
      if (!m) throw fail(`unexpected "${c}"`);
      tokens.push({ t: "num", v: Number(m[0]), int: m[1] === undefined });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(body.slice(i))!;
      tokens.push({ t: "ident", v: m[0] });
      i += m[0].length;
    } else throw fail(`unexpected "${c}"`);
  }
  return tokens;
}

// ---------------------------------------------------------------------------
// Parsing

type Operand =
  | { kind: "literal"; value: Value }
  | { kind: "field"; path: string[] }
  | { kind: "var"; name: string; path: string[] }
  | { kind: "func"; name: string }
  | { kind: "pipe"; pipe: Pipe; path: string[] };

interface Pipe {
  decl: { names: string[]; op: ":=" | "=" } | null;
  cmds: Operand[][];
  at: Source;
}

type Node =
  | { kind: "text"; text: string }
  | { kind: "print"; pipe: Pipe }
  | { kind: "if"; branches: { cond: Pipe; body: Node[] }[]; otherwise: Node[] }
  | { kind: "range"; pipe: Pipe; body: Node[]; otherwise: Node[] }
  | { kind: "with"; pipe: Pipe; body: Node[]; otherwise: Node[] };

const KEYWORDS = new Set(["if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"]);

function parsePipe(tokens: Token[], at: Source): Pipe {
  const fail = (what: string) => new TemplateError(`${at.template}:${at.line}: ${what}`);
  let pos = 0;
  let decl: Pipe["decl"] = null;
  // $a := ..., $a, $b := ..., $a = ...
  const declEnd = tokens.findIndex((t) => t.t === ":=" || t.t === "=");
  if (declEnd > 0 && tokens.slice(0, declEnd).every((t) => t.t === "var" || t.t === ",")) {
    const names = tokens
      .slice(0, declEnd)
      .filter((t): t is Extract<Token, { t: "var" }> => t.t === "var")
      .map((t) => t.v);
    decl = { names, op: tokens[declEnd]!.t as ":=" | "=" };
    pos = declEnd + 1;
  }
  const parseCmds = (stopAtParen: boolean): Operand[][] => {
    const cmds: Operand[][] = [[]];
    while (pos < tokens.length) {
      const token = tokens[pos]!;
      if (token.t === ")") {
        if (!stopAtParen) throw fail("unexpected )");
        return cmds;
      }
      pos++;
      const cmd = cmds.at(-1)!;
      switch (token.t) {
        case "|":
          if (cmd.length === 0) throw fail("empty command before |");
          cmds.push([]);
          break;
        case "str":
          cmd.push({ kind: "literal", value: token.v });
          break;
        case "num":
          // Go's constants: 1 is an int, 1.5 a float64 (as every number of values.yaml is in Helm).
          cmd.push({ kind: "literal", value: token.int ? new GoInt(token.v) : token.v });
          break;
        case "field":
          cmd.push({ kind: "field", path: token.v });
          break;
        case "var":
          cmd.push({ kind: "var", name: token.v, path: token.path });
          break;
        case "ident":
          if (token.v === "true" || token.v === "false") cmd.push({ kind: "literal", value: token.v === "true" });
          else if (token.v === "nil") cmd.push({ kind: "literal", value: null });
          else if (KEYWORDS.has(token.v)) throw fail(`keyword ${token.v} inside a pipeline`);
          else cmd.push({ kind: "func", name: token.v });
          break;
        case "(": {
          const inner = parseCmds(true);
          const close = tokens[pos];
          if (close?.t !== ")") throw fail("unclosed (");
          pos++;
          cmd.push({ kind: "pipe", pipe: { decl: null, cmds: inner, at }, path: close.path });
          break;
        }
        default:
          throw fail(`unexpected ${token.t}`);
      }
    }
    if (stopAtParen) throw fail("unclosed (");
    return cmds;
  };
  const cmds = parseCmds(false);
  if (cmds.some((c) => c.length === 0)) throw fail("empty pipeline");
  return { decl, cmds, at };
}

interface Parsed {
  nodes: Node[];
  defines: Map<string, Node[]>;
}

function parseTemplate(text: string, template: string): Parsed {
  const pieces = splitActions(text, template);
  const defines = new Map<string, Node[]>();
  let pos = 0;

  // Parses nodes until one of `stops` (else, end); returns the nodes and the stop that ended them.
  const parseList = (stops: string[]): { nodes: Node[]; stop: { word: string; rest: Token[]; at: Source } | null } => {
    const nodes: Node[] = [];
    while (pos < pieces.length) {
      const piece = pieces[pos++]!;
      if (piece.kind === "text") {
        if (piece.text) nodes.push({ kind: "text", text: piece.text });
        continue;
      }
      const { body, at } = piece;
      if (body.startsWith("/*")) {
        if (!body.endsWith("*/")) throw new TemplateError(`${at.template}:${at.line}: a comment must end with */`);
        continue;
      }
      const tokens = lexAction(body, at);
      const first = tokens[0];
      const word = first?.t === "ident" && KEYWORDS.has(first.v) ? first.v : null;
      if (word === null) {
        nodes.push({ kind: "print", pipe: parsePipe(tokens, at) });
        continue;
      }
      const rest = tokens.slice(1);
      if (word === "else" || word === "end") {
        if (!stops.includes(word)) throw new TemplateError(`${at.template}:${at.line}: unexpected {{ ${word} }}`);
        return { nodes, stop: { word, rest, at } };
      }
      if (word === "if") {
        const branches: { cond: Pipe; body: Node[] }[] = [];
        let cond = parsePipe(rest, at);
        for (;;) {
          const part = parseList(["else", "end"]);
          branches.push({ cond, body: part.nodes });
          if (!part.stop) throw new TemplateError(`${at.template}:${at.line}: {{ if }} without {{ end }}`);
          if (part.stop.word === "end") {
            nodes.push({ kind: "if", branches, otherwise: [] });
            break;
          }
          const elseRest = part.stop.rest;
          if (elseRest.length > 0 && elseRest[0]!.t === "ident" && elseRest[0]!.v === "if") {
            cond = parsePipe(elseRest.slice(1), part.stop.at);
            continue;
          }
          if (elseRest.length > 0) throw new TemplateError(`${part.stop.at.template}:${part.stop.at.line}: unexpected words after else`);
          const otherwise = parseList(["end"]);
          if (!otherwise.stop) throw new TemplateError(`${at.template}:${at.line}: {{ else }} without {{ end }}`);
          nodes.push({ kind: "if", branches, otherwise: otherwise.nodes });
          break;
        }
      } else if (word === "range" || word === "with") {
        const pipe = parsePipe(rest, at);
        if (word === "with" && pipe.decl) throw new TemplateError(`${at.template}:${at.line}: with $x := is not supported`);
        const body = parseList(["else", "end"]);
        if (!body.stop) throw new TemplateError(`${at.template}:${at.line}: {{ ${word} }} without {{ end }}`);
        let otherwise: Node[] = [];
        if (body.stop.word === "else") {
          if (body.stop.rest.length > 0)
            throw new TemplateError(`${body.stop.at.template}:${body.stop.at.line}: else ${word === "with" ? "with" : "if"} is not supported here`);
          const part = parseList(["end"]);
          if (!part.stop) throw new TemplateError(`${at.template}:${at.line}: {{ else }} without {{ end }}`);
          otherwise = part.nodes;
        }
        nodes.push({ kind: word, pipe, body: body.nodes, otherwise });
      } else if (word === "define") {
        const name = rest[0];
        if (rest.length !== 1 || name?.t !== "str") throw new TemplateError(`${at.template}:${at.line}: define takes one string`);
        if (stops.length > 0) throw new TemplateError(`${at.template}:${at.line}: define inside a block`);
        const body = parseList(["end"]);
        if (!body.stop) throw new TemplateError(`${at.template}:${at.line}: {{ define }} without {{ end }}`);
        if (defines.has(name.v)) throw new TemplateError(`${at.template}:${at.line}: ${name.v} is defined twice`);
        defines.set(name.v, body.nodes);
      } else {
        throw new TemplateError(`${at.template}:${at.line}: {{ ${word} }} is not supported by this renderer`);
      }
    }
    return { nodes, stop: null };
  };

  const top = parseList([]);
  return { nodes: top.nodes, defines };
}

// ---------------------------------------------------------------------------
// Values

const isMap = (v: Value): v is Record<string, Value> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Go's truth: false, 0, nil, and empty strings, lists and maps are false. */
function truthy(v: Value): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isMap(v)) return Object.keys(v).length > 0;
  return true;
}

/** A number as Go's %v prints a float64 (Helm's values are float64): shortest digits, an exponent from a million on (1e+06). */
function formatNumber(n: number): string {
  if (n === 0) return "0";
  const exp = Math.floor(Math.log10(Math.abs(n)));
  if (exp < -4 || exp >= 6) return n.toExponential().replace(/e([+-])(\d)$/, "e$10$2");
  return String(n);
}

/** An int (from int, or a range's index): printed in full. */
class GoInt {
  constructor(readonly value: number) {}
}

function printable(v: Value, at: Source): string {
  if (v === null || v === undefined) return "";
  if (v instanceof GoInt) return String(v.value);
  if (typeof v === "string") return v;
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "boolean") return String(v);
  throw new TemplateError(`${at.template}:${at.line}: a ${Array.isArray(v) ? "list" : "map"} printed as text (use toYaml)`);
}

const num = (v: Value): number => (v instanceof GoInt ? v.value : (v as number));

function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** Go's Sprintf for %s, %d, %v, %q and %%: a verb of another type than its argument's is an error (Go would print %!s(float64=1)). */
function sprintf(format: string, args: Value[], at: Source): string {
  const fail = (what: string) => new TemplateError(`${at.template}:${at.line}: printf ${JSON.stringify(format)}: ${what}`);
  const typeOf = (v: Value) => (v instanceof GoInt ? "int" : typeof v === "number" ? "float64 (use int)" : v === null || v === undefined ? "nil" : typeof v);
  let i = 0;
  const out = format.replace(/%(.?)/g, (_, verb: string) => {
    if (verb === "%") return "%";
    if (!"sdvq".includes(verb) || verb === "") throw fail(`%${verb} is not supported by this renderer`);
    if (i >= args.length) throw fail("too few arguments");
    const arg = args[i++];
    if (verb === "d") {
      if (!(arg instanceof GoInt)) throw fail(`%d of a ${typeOf(arg)}`);
      return String(arg.value);
    }
    if (verb !== "v" && typeof arg !== "string") throw fail(`%${verb} of a ${typeOf(arg)}`);
    const text = printable(arg, at);
    return verb === "q" ? goQuote(text) : text;
  });
  if (i < args.length) throw fail("too many arguments");
  return out;
}

/** As Helm's toYaml (go-yaml): strings YAML 1.1 would read as something else (y, on, 0755, 1:20) are quoted. */
function toYaml(v: Value): string {
  if (v instanceof GoInt) return String(v.value);
  return stringify(v, { version: "1.1", lineWidth: 0, indent: 2, indentSeq: true }).replace(/\n$/, "");
}

function indent(n: number, s: string): string {
  const pad = " ".repeat(n);
  return pad + s.replace(/\n/g, `\n${pad}`);
}

function empty(v: Value): boolean {
  return !truthy(v);
}

/** Go compares an int with an int and a float64 with a float64: eq 1 .Values.replicaCount is an error in helm. */
function sameKind(a: Value, b: Value): boolean {
  const kind = (v: Value) => (v instanceof GoInt ? "int" : v === null || v === undefined ? "nil" : typeof v === "number" ? "float64" : typeof v);
  return kind(a) === kind(b);
}

// ---------------------------------------------------------------------------
// Executing

interface Scope {
  vars: Map<string, Value>;
  parent: Scope | null;
}

interface Context {
  defines: Map<string, Node[]>;
  depth: number;
}

type Lazy = () => Value;

/** The functions the chart may call: Go's builtins and Sprig's, as Helm defines them. */
const FUNCTIONS: Record<string, (ctx: Context, at: Source, args: Lazy[]) => Value> = {
  include: (ctx, at, [name, data]) => {
    const nodes = ctx.defines.get(String(name?.()));
    if (!nodes) throw new TemplateError(`${at.template}:${at.line}: include of undefined template "${String(name?.())}"`);
    if (ctx.depth > 50) throw new TemplateError(`${at.template}:${at.line}: include nested too deeply`);
    const dot = data ? data() : null;
    return execute(nodes, dot, { vars: new Map([["$", dot]]), parent: null }, { ...ctx, depth: ctx.depth + 1 });
  },
  toYaml: (_, __, [v]) => toYaml(v!()),
  nindent: (_, __, [n, s]) => `\n${indent(num(n!()), String(s!()))}`,
  indent: (_, __, [n, s]) => indent(num(n!()), String(s!())),
  quote: (_, at, args) =>
    args
      .map((a) => a())
      .filter((v) => v !== null && v !== undefined)
      .map((v) => goQuote(printable(v, at)))
      .join(" "),
  default: (_, __, args) => {
    const given = args.length > 1 ? args.at(-1)!() : null;
    return empty(given) ? args[0]!() : given;
  },
  required: (_, at, [message, v]) => {
    const value = v!();
    if (value === null || value === undefined || value === "") throw new TemplateError(`${at.template}:${at.line}: ${String(message!())}`);
    return value;
  },
  fail: (_, at, [message]) => {
    throw new TemplateError(`${at.template}:${at.line}: ${String(message!())}`);
  },
  printf: (_, at, [format, ...args]) =>
    sprintf(
      String(format!()),
      args.map((a) => a()),
      at,
    ),
  trunc: (_, at, [n, s]) => {
    const length = num(n!());
    if (!(length >= 0)) throw new TemplateError(`${at.template}:${at.line}: trunc of a negative length is not supported by this renderer`);
    return String(s!()).slice(0, length);
  },
  trimSuffix: (_, __, [suffix, s]) => {
    const text = String(s!());
    const end = String(suffix!());
    return end && text.endsWith(end) ? text.slice(0, -end.length) : text;
  },
  hasPrefix: (_, __, [prefix, s]) => String(s!()).startsWith(String(prefix!())),
  hasKey: (_, at, [m, key]) => {
    const map = m!();
    if (!isMap(map)) throw new TemplateError(`${at.template}:${at.line}: hasKey of a ${typeof map}`);
    return Object.hasOwn(map, String(key!()));
  },
  list: (_, __, args) => args.map((a) => a()),
  int: (_, at, [v]) => {
    const value = v!();
    const n = typeof value === "string" ? Number.parseInt(value, 10) : num(value);
    if (!Number.isFinite(n)) throw new TemplateError(`${at.template}:${at.line}: int of ${JSON.stringify(value)}`);
    return new GoInt(Math.trunc(n));
  },
  b64enc: (_, __, [v]) => Buffer.from(String(v!())).toString("base64"),
  not: (_, __, [v]) => !truthy(v!()),
  empty: (_, __, [v]) => empty(v!()),
  and: (_, __, args) => {
    let last: Value = true;
    for (const a of args) if (!truthy((last = a()))) return last;
    return last;
  },
  or: (_, __, args) => {
    let last: Value = false;
    for (const a of args) if (truthy((last = a()))) return last;
    return last;
  },
  eq: (_, at, [a, ...rest]) => {
    const left = a!();
    return rest.some((r) => {
      const right = r();
      if (!sameKind(left, right)) throw new TemplateError(`${at.template}:${at.line}: eq of incompatible types`);
      return (left instanceof GoInt ? left.value : left) === (right instanceof GoInt ? right.value : right);
    });
  },
  ne: (ctx, at, args) => !FUNCTIONS.eq!(ctx, at, args),
  gt: (_, at, [a, b]) => {
    const [x, y] = [a!(), b!()];
    if (!sameKind(x, y) || typeof num(x) !== "number")
      throw new TemplateError(`${at.template}:${at.line}: gt of incompatible types (int and float64: use int)`);
    return num(x) > num(y);
  },
};

function lookup(value: Value, path: string[], what: string, at: Source): Value {
  let v = value;
  let walked = what;
  for (const name of path) {
    if (!isMap(v))
      throw new TemplateError(`${at.template}:${at.line}: ${walked} is ${v === null || v === undefined ? "nil" : `a ${typeof v}`}, it has no field ${name}`);
    if (!Object.hasOwn(v, name)) throw new TemplateError(`${at.template}:${at.line}: ${walked}.${name} is missing (values.yaml should define every value)`);
    v = v[name];
    walked = `${walked}.${name}`;
  }
  return v;
}

function variable(scope: Scope, name: string, at: Source): Value {
  for (let s: Scope | null = scope; s; s = s.parent) if (s.vars.has(name)) return s.vars.get(name);
  throw new TemplateError(`${at.template}:${at.line}: undefined variable ${name}`);
}

function evalPipe(pipe: Pipe, dot: Value, scope: Scope, ctx: Context): Value {
  let piped: { value: Value } | null = null;
  for (const cmd of pipe.cmds) {
    const head = cmd[0]!;
    const rest = cmd.slice(1);
    const operand =
      (o: Operand): Lazy =>
      () =>
        evalOperand(o, dot, scope, ctx, pipe.at);
    if (head!.kind === "func") {
      const fn = FUNCTIONS[head.name];
      if (!fn) throw new TemplateError(`${pipe.at.template}:${pipe.at.line}: function "${head.name}" is not supported by this renderer`);
      const args = rest.map(operand);
      if (piped) {
        const value = piped.value;
        args.push(() => value);
      }
      piped = { value: fn(ctx, pipe.at, args) };
    } else {
      if (rest.length > 0 || piped) throw new TemplateError(`${pipe.at.template}:${pipe.at.line}: arguments given to a value that is not a function`);
      piped = { value: evalOperand(head, dot, scope, ctx, pipe.at) };
    }
  }
  const value = piped!.value;
  if (pipe.decl) {
    const [name] = pipe.decl.names;
    if (pipe.decl.names.length !== 1) throw new TemplateError(`${pipe.at.template}:${pipe.at.line}: too many variables`);
    if (pipe.decl.op === ":=") scope.vars.set(name!, value);
    else {
      let s: Scope | null = scope;
      while (s && !s.vars.has(name!)) s = s.parent;
      if (!s) throw new TemplateError(`${pipe.at.template}:${pipe.at.line}: undefined variable ${name}`);
      s.vars.set(name!, value);
    }
  }
  return value;
}

function evalOperand(o: Operand, dot: Value, scope: Scope, ctx: Context, at: Source): Value {
  switch (o.kind) {
    case "literal":
      return o.value;
    case "field":
      return lookup(dot, o.path, ".", at);
    case "var":
      return lookup(variable(scope, o.name, at), o.path, o.name, at);
    case "pipe":
      return lookup(evalPipe(o.pipe, dot, scope, ctx), o.path, "(...)", at);
    case "func": {
      const fn = FUNCTIONS[o.name];
      if (!fn) throw new TemplateError(`${at.template}:${at.line}: function "${o.name}" is not supported by this renderer`);
      return fn(ctx, at, []);
    }
  }
}

function execute(nodes: Node[], dot: Value, scope: Scope, ctx: Context): string {
  let out = "";
  for (const node of nodes) {
    switch (node.kind) {
      case "text":
        out += node.text;
        break;
      case "print": {
        const value = evalPipe(node.pipe, dot, scope, ctx);
        if (!node.pipe.decl) out += printable(value, node.pipe.at);
        break;
      }
      case "if": {
        const inner: Scope = { vars: new Map(), parent: scope };
        const branch = node.branches.find((b) => truthy(evalPipe(b.cond, dot, inner, ctx)));
        out += execute(branch ? branch.body : node.otherwise, dot, inner, ctx);
        break;
      }
      case "with": {
        const inner: Scope = { vars: new Map(), parent: scope };
        const value = evalPipe(node.pipe, dot, inner, ctx);
        out += truthy(value) ? execute(node.body, value, inner, ctx) : execute(node.otherwise, dot, inner, ctx);
        break;
      }
      case "range": {
        const names = node.pipe.decl?.names ?? [];
        if (node.pipe.decl?.op === "=") throw new TemplateError(`${node.pipe.at.template}:${node.pipe.at.line}: range with = is not supported`);
        const source = evalPipe({ ...node.pipe, decl: null }, dot, scope, ctx);
        let items: [Value, Value][];
        if (Array.isArray(source)) items = source.map((v, i) => [new GoInt(i), v]);
        else if (isMap(source))
          items = Object.keys(source)
            .sort()
            .map((k) => [k, source[k]]);
        else if (source === null || source === undefined) items = [];
        else throw new TemplateError(`${node.pipe.at.template}:${node.pipe.at.line}: range over a ${typeof source}`);
        if (items.length === 0) {
          out += execute(node.otherwise, dot, { vars: new Map(), parent: scope }, ctx);
          break;
        }
        for (const [key, value] of items) {
          const inner: Scope = { vars: new Map(), parent: scope };
          if (names.length === 1) inner.vars.set(names[0]!, value);
          if (names.length === 2) {
            inner.vars.set(names[0]!, key);
            inner.vars.set(names[1]!, value);
          }
          out += execute(node.body, value, inner, ctx);
        }
        break;
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// A chart

export interface Manifest {
  /** The template that made it: templates/deployment.yaml. */
  template: string;
  kind: string;
  name: string;
  doc: any;
}

export interface RenderOptions {
  /** Merged over values.yaml as `helm --set`/`-f` merge them: maps key by key, anything else replaced, null removes. */
  values?: Record<string, unknown>;
  release?: { name?: string; namespace?: string; isUpgrade?: boolean };
}

export interface RenderedChart {
  manifests: Manifest[];
  notes: string;
  values: Record<string, unknown>;
}

function mergeValues(base: Value, over: Value): Value {
  if (!isMap(base) || !isMap(over)) return over;
  const out: Record<string, Value> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === null) delete out[key];
    else out[key] = mergeValues(base[key], value);
  }
  return out;
}

function readTemplates(dir: string, prefix = "templates"): { name: string; text: string }[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) =>
      entry.isDirectory()
        ? readTemplates(path.join(dir, entry.name), `${prefix}/${entry.name}`)
        : [{ name: `${prefix}/${entry.name}`, text: fs.readFileSync(path.join(dir, entry.name), "utf8") }],
    );
}

/** Renders the chart in `chartDir` as `helm template` would, and parses every manifest (YAML 1.1, as Kubernetes reads it). */
export function renderChart(chartDir: string, options: RenderOptions = {}): RenderedChart {
  const chart = parse(fs.readFileSync(path.join(chartDir, "Chart.yaml"), "utf8")) as Record<string, unknown>;
  const defaults = parse(fs.readFileSync(path.join(chartDir, "values.yaml"), "utf8")) as Record<string, unknown>;
  const values = mergeValues(defaults, options.values ?? {}) as Record<string, unknown>;
  const release = options.release ?? {};
  const data = {
    Values: values,
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion, Description: chart.description },
    Release: {
      Name: release.name ?? "release-name",
      Namespace: release.namespace ?? "default",
      Service: "Helm",
      IsInstall: !release.isUpgrade,
      IsUpgrade: release.isUpgrade ?? false,
      Revision: release.isUpgrade ? 2 : 1,
    },
  };
  const templates = readTemplates(path.join(chartDir, "templates")).filter((t) => /\.(ya?ml|tpl|txt)$/.test(t.name));
  const parsed = templates.map((t) => ({ ...t, ...parseTemplate(t.text, t.name) }));
  const defines = new Map<string, Node[]>();
  for (const t of parsed) {
    for (const [name, nodes] of t.defines) {
      if (defines.has(name)) throw new TemplateError(`${t.name}: ${name} is defined in two files`);
      defines.set(name, nodes);
    }
  }
  const ctx: Context = { defines, depth: 0 };
  const manifests: Manifest[] = [];
  let notes = "";
  for (const t of parsed) {
    const base = path.basename(t.name);
    if (base.startsWith("_")) continue;
    const text = execute(t.nodes, data, { vars: new Map([["$", data]]), parent: null }, ctx);
    if (base === "NOTES.txt") {
      notes = text;
      continue;
    }
    for (const doc of parseAllDocuments(text, { version: "1.1", uniqueKeys: true })) {
      const problems = [...doc.errors, ...doc.warnings];
      if (problems.length > 0) throw new TemplateError(`${t.name} renders invalid YAML: ${problems[0]!.message}\n${text}`);
      const value = doc.toJS() as any;
      if (value === null || value === undefined) continue;
      if (!isMap(value) || typeof value.kind !== "string" || typeof value.apiVersion !== "string" || typeof (value.metadata as any)?.name !== "string")
        throw new TemplateError(`${t.name} renders a document without apiVersion, kind and metadata.name:\n${text}`);
      manifests.push({ template: t.name, kind: value.kind, name: (value.metadata as any).name, doc: value });
    }
  }
  return { manifests, notes, values };
}
