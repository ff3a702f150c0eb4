// The floor for fan-out and HTTP throughput: the least any relay must do, in a
// process of its own. It reads the fake model's NDJSON stream with fetch and
// broadcasts each token's text to plain WebSocket (`ws`, as graphql-ws uses)
// and SSE clients; and it answers POST /graphql with fixed bytes, with no
// GraphQL, no database and no framework. POST /yoga is graphql-yoga with a
// one-field schema and its defaults: what the GraphQL server itself costs.
// Prints {"url": ...} once it listens.
import http from "node:http";
import { createSchema, createYoga } from "graphql-yoga";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

const modelUrl = process.env.OLLAMA_HOST ?? "http://127.0.0.1:11434";
const sockets = new Set<WebSocket>();
const streams = new Set<http.ServerResponse>();
let cannedBody: Buffer = Buffer.from(JSON.stringify({ data: { __typename: "Query" } }));

function broadcast(payload: string): void {
  for (const socket of sockets) socket.send(payload);
  for (const res of streams) res.write(`data: ${payload}\n\n`);
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

async function relay(message: string): Promise<void> {
  const response = await fetch(`${modelUrl}/api/chat`, {
    method: "POST",
    body: JSON.stringify({ model: "qwen3", stream: true, messages: [{ role: "user", content: message }] }),
  });
  const decoder = new TextDecoder();
  let pending = "";
  const reader = response.body!.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    const lines = pending.split("\n");
    pending = lines.pop()!;
    for (const line of lines) {
      if (!line) continue;
      const chunk = JSON.parse(line) as { message?: { content?: string }; done?: boolean };
      if (chunk.message?.content) broadcast(JSON.stringify({ text: chunk.message.content }));
      if (chunk.done) broadcast(JSON.stringify({ done: true }));
    }
  }
}

const yoga = createYoga({
  schema: createSchema({ typeDefs: "type Query { hello: String }", resolvers: { Query: { hello: () => "world" } } }),
  graphqlEndpoint: "/yoga",
  logging: false,
  landingPage: false,
  graphiql: false,
});

const server = http.createServer(async (req, res) => {
  const path = (req.url ?? "/").split("?")[0];
  if (path === "/yoga") return void yoga.requestListener(req, res);
  if (req.method === "POST" && path === "/graphql") {
    await readBody(req);
    res.writeHead(200, { "content-type": "application/graphql-response+json; charset=utf-8", "content-length": cannedBody.length });
    return void res.end(cannedBody);
  }
  if (req.method === "PUT" && path === "/canned") {
    cannedBody = await readBody(req);
    return void res.end("ok");
  }
  if (req.method === "POST" && path === "/stream") {
    const { message } = JSON.parse((await readBody(req)).toString("utf8")) as { message: string };
    res.end("ok");
    return void relay(message).catch((error) => process.stderr.write(`relay failed: ${error}\n`));
  }
  if (req.method === "GET" && path === "/sse") {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.write(`data: ${JSON.stringify({ live: true })}\n\n`);
    streams.add(res);
    res.on("close", () => streams.delete(res));
    return;
  }
  if (req.method === "POST" && path === "/gc") {
    // Only with --expose-gc: a full collection before a memory reading.
    (globalThis as { gc?: () => void }).gc?.();
    res.writeHead(200, { "content-type": "application/json" });
    return void res.end(JSON.stringify(process.memoryUsage()));
  }
  if (path === "/health") return void res.end("ok");
  res.writeHead(404).end();
});

const wss = new WebSocketServer({ server, path: "/ws" });
wss.on("connection", (socket) => {
  sockets.add(socket);
  socket.on("close", () => sockets.delete(socket));
  socket.send(JSON.stringify({ live: true }));
});

server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
process.on("SIGTERM", () => {
  for (const socket of sockets) socket.terminate();
  for (const res of streams) res.destroy();
  server.close(() => process.exit(0));
});
