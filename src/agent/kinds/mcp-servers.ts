// A chat agent's MCP servers as the config file declares them ("mcpServers"):
// their definitions, the keys a server takes, and how they are read and checked.
import { statSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { ioReason, NAME, NAME_RULE, stringList, stringMap, type DefinitionReader, type JsonPath } from "./definition-reader.ts";

/** The MCP SDK's own default for one request: what a server's calls wait without `timeoutMs`. */
export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

interface McpServerBase {
  name: string;
  /** Allow-list: only these of the server's tools reach the agent; undefined means all of them. */
  tools: string[] | undefined;
  /** How long one tool call may go without a result or a progress notification before it fails. */
  timeoutMs: number;
  /** e.g. `RUNLEDGER_CONFIG ./agents.json: agents.support.mcpServers.files`. */
  origin: string;
}

export interface StdioMcpServerDefinition extends McpServerBase {
  transport: "stdio";
  /** A program on PATH, or an absolute path. */
  command: string;
  args: string[];
  /** Variables added to the safe defaults, `${NAME}` already substituted. */
  env: Record<string, string>;
  /** Absolute working directory of the process. */
  cwd: string;
}

export interface HttpMcpServerDefinition extends McpServerBase {
  transport: "http";
  /** The streamable HTTP endpoint, e.g. https://mcp.example.com/mcp. */
  url: string;
  /** Sent with every request (an API key, say), `${NAME}` already substituted. */
  headers: Record<string, string>;
  /**
   * Opt-in: headers that tell the server whom a tool call works for, each
   * naming what it carries from the run's caller: `id`, `role` or
   * `claims.<name>` (a claim AUTH_AGENT_CLAIMS passes on). Empty: none sent.
   */
  userHeaders: Record<string, UserField>;
  /** Opt-in: each tool call carries the caller's own JWT as `Authorization: Bearer`, when the caller signed in with one. */
  forwardToken: boolean;
}

/** What a user header carries from the caller: its id, its role, or one of its passed-on claims. */
export type UserField = { field: "id" } | { field: "role" } | { field: "claim"; name: string };

export type McpServerDefinition = StdioMcpServerDefinition | HttpMcpServerDefinition;

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const mcpServerSchema = z.strictObject({
  command: z.string().optional(),
  args: stringList.optional(),
  env: stringMap.optional(),
  cwd: z.string().optional(),
  url: z.string().optional(),
  headers: stringMap.optional(),
  userHeaders: stringMap.optional(),
  forwardToken: z.boolean().optional(),
  tools: stringList.optional(),
  timeoutMs: z.number().int().min(1).max(86_400_000).optional(),
});

type ServerShape = z.infer<typeof mcpServerSchema>;

function readUserField(value: string, at: JsonPath, reader: DefinitionReader): UserField {
  if (value === "id" || value === "role") return { field: value };
  const claim = /^claims\.(.+)$/.exec(value);
  if (claim) return { field: "claim", name: claim[1]! };
  return reader.fail(at, `expected "id", "role" or "claims.<name>" (what the header carries from the caller), got "${value}"`);
}

/**
 * The agent's servers, in the file's order (which decides name clashes). A tool
 * an allow-list names must not be another tool of the agent: one of `builtins`
 * or of an earlier server's allow-list. Returns the servers and which server
 * allows each tool an allow-list names.
 */
export function readMcpServers(
  servers: Record<string, ServerShape>,
  builtins: readonly string[],
  at: JsonPath,
  reader: DefinitionReader,
): { mcpServers: McpServerDefinition[]; allowedFrom: Map<string, string> } {
  const allowedFrom = new Map<string, string>();
  const mcpServers: McpServerDefinition[] = [];
  for (const [serverName, server] of Object.entries(servers)) {
    const serverAt = [...at, serverName];
    if (!NAME.test(serverName)) reader.fail(serverAt, `server names use ${NAME_RULE}`, { key: true });
    const definition = readServer(serverName, server, serverAt, reader);
    definition.tools?.forEach((tool, i) => {
      const toolAt = [...serverAt, "tools", i];
      if (builtins.includes(tool)) reader.fail(toolAt, `"${tool}" is also a built-in tool of this agent; tool names must be unique within an agent`);
      const other = allowedFrom.get(tool);
      if (other !== undefined) reader.fail(toolAt, `"${tool}" is also allowed from server "${other}"; tool names must be unique within an agent`);
      allowedFrom.set(tool, serverName);
    });
    mcpServers.push(definition);
  }
  return { mcpServers, allowedFrom };
}

function readServer(name: string, server: ServerShape, at: JsonPath, reader: DefinitionReader): McpServerDefinition {
  const common = {
    name,
    tools: server.tools,
    timeoutMs: server.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS,
    origin: reader.origin(at),
  };
  if (server.tools !== undefined) {
    if (server.tools.length === 0)
      reader.fail([...at, "tools"], `an empty allow-list lets no tool through; list tool names, or leave "tools" out for all of them`);
    reader.unique(server.tools, [...at, "tools"]);
    server.tools.forEach((tool, i) => reader.nonEmpty(tool, [...at, "tools", i]));
  }
  const stdioKeys = (["command", "args", "env", "cwd"] as const).filter((k) => server[k] !== undefined);
  const httpKeys = (["url", "headers", "userHeaders", "forwardToken"] as const).filter((k) => server[k] !== undefined);
  if (server.command !== undefined && server.url !== undefined) {
    reader.fail([...at, "url"], `a server has "command" (stdio) or "url" (streamable HTTP), not both`);
  }
  if (server.url !== undefined) {
    if (stdioKeys.length > 0) reader.fail([...at, stdioKeys[0]!], `"${stdioKeys[0]}" is for stdio servers; this one has "url"`);
    let url: URL | undefined;
    try {
      url = new URL(server.url);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
      reader.fail([...at, "url"], `expected an http or https URL such as https://mcp.example.com/mcp, got "${server.url}"`);
    }
    const headers: Record<string, string> = {};
    for (const [header, value] of Object.entries(server.headers ?? {})) {
      if (!HEADER_NAME.test(header)) reader.fail([...at, "headers", header], `"${header}" is not a valid HTTP header name`, { key: true });
      headers[header] = reader.substitute(value, [...at, "headers", header]);
    }
    const userHeaders: Record<string, UserField> = {};
    for (const [header, value] of Object.entries(server.userHeaders ?? {})) {
      const where = [...at, "userHeaders", header];
      if (!HEADER_NAME.test(header)) reader.fail(where, `"${header}" is not a valid HTTP header name`, { key: true });
      if (Object.keys(headers).some((h) => h.toLowerCase() === header.toLowerCase()))
        reader.fail(where, `"${header}" is also in "headers"; a header has one source`, { key: true });
      userHeaders[header] = readUserField(value, where, reader);
    }
    const forwardToken = server.forwardToken ?? false;
    if (forwardToken && [...Object.keys(headers), ...Object.keys(userHeaders)].some((h) => h.toLowerCase() === "authorization")) {
      reader.fail(
        [...at, "forwardToken"],
        `"forwardToken" sends the caller's Authorization header; this server already sets one in "headers" or "userHeaders"`,
      );
    }
    return { ...common, transport: "http", url: server.url, headers, userHeaders, forwardToken };
  }
  if (server.command === undefined) reader.fail(at, `a server needs "command" (stdio) or "url" (streamable HTTP)`);
  if (httpKeys.length > 0) reader.fail([...at, httpKeys[0]!], `"${httpKeys[0]}" is for HTTP servers; this one has no "url"`);
  const command = reader.nonEmpty(server.command, [...at, "command"])!;
  const env: Record<string, string> = {};
  for (const [variable, value] of Object.entries(server.env ?? {})) {
    if (!ENV_NAME.test(variable)) reader.fail([...at, "env", variable], `"${variable}" is not a valid environment variable name`, { key: true });
    env[variable] = reader.substitute(value, [...at, "env", variable]);
  }
  const cwd = server.cwd === undefined ? reader.folder : reader.path(server.cwd, [...at, "cwd"]);
  let isDirectory = false;
  try {
    isDirectory = statSync(cwd).isDirectory();
  } catch (error) {
    reader.fail([...at, "cwd"], `${server.cwd} does not exist (${ioReason(error)})`);
  }
  if (!isDirectory) reader.fail([...at, "cwd"], `${server.cwd} is not a folder`);
  // A bare name is looked up on PATH by the OS; anything with a slash is a path from the config file's folder.
  const resolvedCommand = command.includes("/") ? path.resolve(reader.folder, command) : command;
  return { ...common, transport: "stdio", command: resolvedCommand, args: server.args ?? [], env, cwd };
}
