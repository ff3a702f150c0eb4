// Plain-HTTP answers of the routes beside GraphQL.
import type { ServerResponse } from "node:http";

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** A refusal of a REST route, in the one shape every route under /api answers: `{code, message}`. */
export function sendRefusal(res: ServerResponse, status: number, code: string, message: string): void {
  sendJson(res, status, { code, message });
}
