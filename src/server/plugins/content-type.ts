// Which request bodies /graphql reads: UTF-8 JSON (the GraphQL over HTTP format)
// and application/graphql. Form bodies (urlencoded, multipart) are what a foreign
// web page can POST without a CORS preflight; yoga would execute them, mutations
// included, so they are refused with 415 before they are read. A body that is not
// valid UTF-8 is refused with 400, rather than decoded with replacement
// characters into a message nobody sent.
//
// The byte limit (MAX_REQUEST_BYTES) is enforced here too, in place of yoga's
// maxRequestBodySize: yoga pipes every body through a TransformStream to count
// it, which cost more CPU than executing `{ __typename }` itself. A valid
// Content-Length is checked before reading (Node's parser reads no more than it
// says); a body without one (chunked) is counted as it arrives.
import { createGraphQLError, type Plugin } from "graphql-yoga";

const ACCEPTED = ["application/json", "application/graphql-response+json", "application/graphql+json", "application/graphql"];
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

function parseContentType(header: string | null): { type: string; charset: string | undefined } {
  const [type = "", ...params] = (header ?? "").split(";").map((part) => part.trim());
  const charset = params
    .find((p) => p.toLowerCase().startsWith("charset="))
    ?.slice("charset=".length)
    .replace(/"/g, "")
    .toLowerCase();
  return { type: type.toLowerCase(), charset };
}

const tooLarge = () => createGraphQLError("Request body too large", { extensions: { http: { status: 413 }, code: "REQUEST_ENTITY_TOO_LARGE" } });

/** The body's bytes, refusing with 413 once more than maxBytes arrive. */
async function readBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  if (request.headers.get("content-length") !== null) return new Uint8Array(await request.arrayBuffer());
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let length = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
}

export interface RequestBodyOptions {
  /** The largest POST body read, in bytes (MAX_REQUEST_BYTES); a larger one is refused with 413. */
  maxBytes: number;
}

export function useJsonBodiesOnly({ maxBytes }: RequestBodyOptions): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
      if (request.method !== "POST") return;
      // Node's HTTP parser has already refused a Content-Length that is not one integer (400).
      const contentLength = request.headers.get("content-length");
      if (contentLength !== null && Number(contentLength) > maxBytes) throw tooLarge();
      const refuse = (status: number, code: string, message: string) =>
        fetchAPI.Response.json({ errors: [{ message, extensions: { code } }] }, { status, headers: status === 415 ? { accept: ACCEPTED.join(", ") } : {} });
      const { type, charset } = parseContentType(request.headers.get("content-type"));
      if (!ACCEPTED.includes(type)) {
        setRequestParser(() =>
          refuse(
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            `POST bodies must be application/json (or application/graphql), got ${JSON.stringify(type || "no content-type")}`,
          ),
        );
        return;
      }
      if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
        setRequestParser(() => refuse(415, "UNSUPPORTED_MEDIA_TYPE", `POST bodies must be UTF-8, got charset ${JSON.stringify(charset)}`));
        return;
      }
      if (!requestParser) return;
      const parse = requestParser;
      setRequestParser(async (received) => {
        const bytes = await readBody(received, maxBytes);
        let text: string;
        try {
          text = STRICT_UTF8.decode(bytes);
        } catch (error) {
          if (!(error instanceof TypeError)) throw error;
          return refuse(400, "BAD_REQUEST", "the request body is not valid UTF-8");
        }
        return parse(new fetchAPI.Request(received.url, { method: "POST", headers: received.headers, body: text }));
      });
    },
  };
}
