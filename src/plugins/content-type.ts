// Which request bodies /graphql reads: UTF-8 JSON (the GraphQL over HTTP format)
// and application/graphql. Form bodies (urlencoded, multipart) are what a foreign
// web page can POST without a CORS preflight; yoga would execute them, mutations
// included, so they are refused with 415 before they are read. A body that is not
// valid UTF-8 is refused with 400, rather than decoded with replacement
// characters into a message nobody sent.
import type { Plugin } from "graphql-yoga";

const ACCEPTED = ["application/json", "application/graphql-response+json", "application/graphql+json", "application/graphql"];
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

function parseContentType(header: string | null): { type: string; charset: string | undefined } {
  const [type = "", ...params] = (header ?? "").split(";").map((part) => part.trim());
  const charset = params.find((p) => p.toLowerCase().startsWith("charset="))?.slice("charset=".length).replace(/"/g, "").toLowerCase();
  return { type: type.toLowerCase(), charset };
}

export function useJsonBodiesOnly(): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
      if (request.method !== "POST") return;
      const refuse = (status: number, code: string, message: string) => fetchAPI.Response.json({ errors: [{ message, extensions: { code } }] }, { status, headers: status === 415 ? { accept: ACCEPTED.join(", ") } : {} });
      const { type, charset } = parseContentType(request.headers.get("content-type"));
      if (!ACCEPTED.includes(type)) {
        setRequestParser(() => refuse(415, "UNSUPPORTED_MEDIA_TYPE", `POST bodies must be application/json (or application/graphql), got ${JSON.stringify(type || "no content-type")}`));
        return;
      }
      if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
        setRequestParser(() => refuse(415, "UNSUPPORTED_MEDIA_TYPE", `POST bodies must be UTF-8, got charset ${JSON.stringify(charset)}`));
        return;
      }
      if (!requestParser) return;
      const parse = requestParser;
      // yoga's byte limit wraps this parser in turn, so the body read here is already bounded.
      setRequestParser(async (limited) => {
        let text: string;
        try {
          text = STRICT_UTF8.decode(await limited.arrayBuffer());
        } catch (error) {
          if (!(error instanceof TypeError)) throw error; // e.g. the body-size limit's 413
          return refuse(400, "BAD_REQUEST", "the request body is not valid UTF-8");
        }
        return parse(new fetchAPI.Request(limited.url, { method: "POST", headers: limited.headers, body: text }));
      });
    },
  };
}
