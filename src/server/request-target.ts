// The request target, read once and in one way before anything decides on it.
// Whether a request needs a credential is decided on its path, and the routes,
// yoga and the WHATWG URL parser read the same path again: a path that a parser
// would rewrite (a dot segment, `%2e%2e`, a doubled slash, a backslash) could
// look open to the first reader and resolve to /graphql for the second. So a
// path not in normal form is refused, and an absolute-form target
// (`GET http://host/metrics`) is read as the path it names.

export interface RequestTarget {
  /** The path, in normal form: what every later decision reads. */
  path: string;
  /** The path with its query: what req.url becomes. */
  target: string;
}

/** A percent-encoded `.`, `/` or `\`, or NUL: a segment that decodes to something a parser would act on. */
const ENCODED_SEPARATOR = /%(2e|2f|5c|00)/i;
const ABSOLUTE_FORM = /^https?:\/\//i;

/** The target in origin form with its path in normal form; null when it is neither origin- nor absolute-form, or not normal. */
export function readRequestTarget(raw: string | undefined): RequestTarget | null {
  let target = raw ?? "/";
  if (ABSOLUTE_FORM.test(target)) {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return null;
    }
    // Only the path and query are read, as from an origin-form target, and checked as one.
    target = `${url.pathname}${url.search}`;
  }
  if (!target.startsWith("/")) return null;
  const query = target.indexOf("?");
  const path = query === -1 ? target : target.slice(0, query);
  if (path.includes("//") || path.includes("\\") || ENCODED_SEPARATOR.test(path)) return null;
  for (const segment of path.split("/")) if (segment === "." || segment === "..") return null;
  // Anything else the URL parser would change (it drops tabs and newlines, say) is not normal either.
  let parsed: string;
  try {
    parsed = new URL(path, "http://localhost").pathname;
  } catch {
    return null;
  }
  if (parsed !== path) return null;
  return { path, target };
}
