// The console's one connection to runledger: the client SDK's
// (@runledger/client), whose WebSocket carries every subscription and whose
// HTTP requests carry queries and mutations, each with the API token when
// there is one. The console adds only its own wording of outcomes. A new
// token means a new Api: nothing from the old one is reused.
import { createRunledgerClient, memoryStorage, type ActionError, type ConnectionState, type RunledgerClient } from "@runledger/client";
import type { Document } from "./documents.ts";

export type { ConnectionState, ConnectionStatus } from "@runledger/client";

/** A typed refusal (a member of a mutation's result union implementing Error), or RequestError when no answer came. */
export interface Refusal {
  __typename: string;
  code: string;
  message: string;
}

/** The member of a mutation's result union that is not a refusal (refusals have a code). */
type Success<Result> = Exclude<Result, { code: unknown }>;

/** A mutation's outcome: its success member, a typed refusal, or a failure to get an answer at all. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

function refusalOf(error: ActionError): Refusal {
  return error.refusal
    ? { __typename: error.refusal.__typename, code: error.refusal.code, message: error.refusal.message }
    : { __typename: "RequestError", ...error };
}

let apis = 0;

export class Api {
  /** Tells one Api from the next (views keyed by it start afresh with a new token). */
  readonly id = ++apis;
  readonly client: RunledgerClient;

  constructor(readonly token: string | null) {
    this.client = createRunledgerClient({
      url: location.origin,
      credentials: token ? () => token : undefined,
      // The console's views read again after every reconnection: a read that failed is said at once, not retried.
      retries: 0,
      // A WebSocket only: the console runs where the API is, and its views keep their own place in each run.
      transport: "ws",
      storage: memoryStorage(),
    });
  }

  getState(): ConnectionState {
    return this.client.connection.getSnapshot();
  }

  onState(listener: () => void): () => void {
    return this.client.connection.subscribe(listener);
  }

  async query<T, V extends Record<string, unknown>>(document: Document<T, V>, variables: NoInfer<V>): Promise<T> {
    return this.client.query(document, variables);
  }

  /**
   * Runs a mutation whose result (`field`) is a union of a success type and
   * errors implementing Error, and returns the success or the refusal as answered.
   */
  async mutate<T, V extends Record<string, unknown>, F extends keyof T & string>(
    document: Document<T, V>,
    variables: NoInfer<V>,
    field: F,
  ): Promise<Outcome<Success<T[F]>>> {
    const result = await this.client.mutate(document, variables, field);
    return result.ok ? { ok: true, value: result.value } : { ok: false, refusal: refusalOf(result.error) };
  }

  /** A plain HTTP GET beside GraphQL (an export), with the credential; throws the refusal in words. */
  async fetchText(path: string): Promise<{ text: string; contentType: string }> {
    const response = await fetch(path, this.token ? { headers: { authorization: `Bearer ${this.token}` } } : {});
    const text = await response.text();
    if (!response.ok) {
      let message = text;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {
        // not JSON: the body as it is
      }
      throw new Error(`${response.status} ${message}`);
    }
    return { text, contentType: response.headers.get("content-type") ?? "text/plain" };
  }

  dispose(): void {
    void this.client.dispose();
  }
}
