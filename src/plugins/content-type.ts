// Which request bodies /graphql reads: JSON (the GraphQL over HTTP format) and
// application/graphql. Form bodies (urlencoded, multipart) are what a foreign web
// page can POST without a CORS preflight; yoga would execute them, mutations
// included, so they are refused with 415 before they are read.
import type { Plugin } from "graphql-yoga";

const ACCEPTED = ["application/json", "application/graphql-response+json", "application/graphql+json", "application/graphql"];

function mediaType(contentType: string | null): string {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase();
}

export function useJsonBodiesOnly(): Plugin {
  return {
    onRequestParse({ request, setRequestParser, fetchAPI }) {
      if (request.method !== "POST") return;
      const type = mediaType(request.headers.get("content-type"));
      if (ACCEPTED.includes(type)) return;
      setRequestParser(() =>
        fetchAPI.Response.json(
          { errors: [{ message: `POST bodies must be application/json (or application/graphql), got ${JSON.stringify(type || "no content-type")}`, extensions: { code: "UNSUPPORTED_MEDIA_TYPE" } }] },
          { status: 415, headers: { accept: ACCEPTED.join(", ") } },
        ),
      );
    },
  };
}
