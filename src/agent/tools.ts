// Built-in tools: real and deterministic, so the agent → tools → agent loop runs
// for real. A tool's failure becomes a tool message the model can read (ToolNode
// turns thrown errors into ToolMessages with status "error"); it never fails the run.
// Both only read: they carry MCP's annotations for it, so a call of theirs cut
// off by a crash is simply run again (tool-journal.ts).
import { tool } from "@langchain/core/tools";
import { z } from "zod";

/** Evaluates + - * / % ^ and parentheses over decimal numbers; nothing else is accepted. */
export function evaluateArithmetic(expression: string): number {
  const src = expression.replace(/\s+/g, "");
  if (src.length === 0) throw new Error("empty expression");
  if (src.length > 500) throw new Error("expression longer than 500 characters");
  let pos = 0;
  const peek = () => src[pos];
  const expect = (ch: string) => {
    if (src[pos] !== ch) throw new Error(`expected "${ch}" at position ${pos + 1}`);
    pos += 1;
  };
  const parseNumber = (): number => {
    const m = /^\d+(\.\d+)?([eE][+-]?\d+)?|^\.\d+/.exec(src.slice(pos));
    if (!m) throw new Error(`unexpected "${peek() ?? "end of input"}" at position ${pos + 1}`);
    pos += m[0].length;
    return Number(m[0]);
  };
  const parsePrimary = (depth: number): number => {
    if (depth > 100) throw new Error("expression nested too deeply");
    const ch = peek();
    if (ch === "(") {
      pos += 1;
      const v = parseSum(depth + 1);
      expect(")");
      return v;
    }
    if (ch === "-") {
      pos += 1;
      return -parsePower(depth + 1);
    }
    if (ch === "+") {
      pos += 1;
      return parsePower(depth + 1);
    }
    return parseNumber();
  };
  const parsePower = (depth: number): number => {
    const base = parsePrimary(depth);
    if (peek() === "^") {
      pos += 1;
      return base ** parsePower(depth + 1);
    }
    return base;
  };
  const parseProduct = (depth: number): number => {
    let v = parsePower(depth);
    for (;;) {
      const op = peek();
      if (op !== "*" && op !== "/" && op !== "%") return v;
      pos += 1;
      const rhs = parsePower(depth);
      if ((op === "/" || op === "%") && rhs === 0) throw new Error("division by zero");
      v = op === "*" ? v * rhs : op === "/" ? v / rhs : v % rhs;
    }
  };
  const parseSum = (depth: number): number => {
    let v = parseProduct(depth);
    for (;;) {
      const op = peek();
      if (op !== "+" && op !== "-") return v;
      pos += 1;
      const rhs = parseProduct(depth);
      v = op === "+" ? v + rhs : v - rhs;
    }
  };
  const value = parseSum(0);
  if (pos !== src.length) throw new Error(`unexpected "${src[pos]}" at position ${pos + 1}`);
  if (!Number.isFinite(value)) throw new Error("result is not a finite number");
  return value;
}

/** MCP's tool annotations for a tool without side effects. */
const READ_ONLY = { readOnlyHint: true, idempotentHint: true };

export const calculatorTool = tool(
  async ({ expression }) => {
    const value = evaluateArithmetic(expression);
    // Round away binary noise (0.1 + 0.2) without hiding real digits.
    return String(Number(value.toPrecision(15)));
  },
  {
    name: "calculator",
    description: "Evaluates an arithmetic expression with + - * / % ^ and parentheses, for example (17 + 4) * 2.",
    schema: z.object({ expression: z.string().describe("the arithmetic expression") }),
    metadata: { annotations: READ_ONLY },
  },
);

export function createCurrentTimeTool(now: () => Date = () => new Date()) {
  return tool(
    async ({ timeZone }) => {
      const date = now();
      if (!timeZone) return date.toISOString();
      try {
        const text = new Intl.DateTimeFormat("en-GB", { timeZone, dateStyle: "full", timeStyle: "long" }).format(date);
        return `${text} (${date.toISOString()})`;
      } catch {
        throw new Error(`unknown time zone "${timeZone}"; use an IANA name such as Europe/Paris`);
      }
    },
    {
      name: "current_time",
      description: "Returns the current date and time, in UTC or in the given IANA time zone.",
      schema: z.object({ timeZone: z.string().optional().describe("an IANA time zone such as Europe/Paris") }),
      metadata: { annotations: READ_ONLY },
    },
  );
}

export function builtinTools(now?: () => Date) {
  return [calculatorTool, createCurrentTimeTool(now)];
}
