// A span for each model call (`chat <model>`) and each tool call
// (`execute_tool <name>`) of a run, from LangChain's callbacks, under the run's
// span, with the attributes of OpenTelemetry's GenAI semantic conventions. Only
// added to a run's callbacks when tracing is on.
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { LLMResult } from "@langchain/core/outputs";
import { SpanKind, SpanStatusCode, type Context, type Span } from "@opentelemetry/api";
import { tracer } from "../telemetry/tracing.ts";

interface Call {
  span: Span;
  firstToken: boolean;
}

export class ModelSpans extends BaseCallbackHandler {
  name = "model-spans";
  readonly #calls = new Map<string, Call>();

  /** `parent`: the run's span context; `mcpServers`: the MCP server of each of the run's tools that has one, by tool name. */
  constructor(
    private readonly parent: Context,
    private readonly mcpServers: ReadonlyMap<string, string>,
  ) {
    // Inline, so the first token's event carries the moment it arrived.
    super({ _awaitHandler: true });
  }

  override handleChatModelStart(
    _llm: unknown,
    _messages: unknown,
    runId: string,
    _parentRunId?: string,
    _extraParams?: unknown,
    _tags?: string[],
    metadata?: Record<string, unknown>,
  ): void {
    const model = typeof metadata?.ls_model_name === "string" ? metadata.ls_model_name : "unknown";
    const system = typeof metadata?.ls_provider === "string" ? metadata.ls_provider : "ollama";
    const span = tracer().startSpan(
      `chat ${model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { "gen_ai.operation.name": "chat", "gen_ai.system": system, "gen_ai.provider.name": system, "gen_ai.request.model": model },
      },
      this.parent,
    );
    this.#calls.set(runId, { span, firstToken: false });
  }

  override handleLLMNewToken(_token: string, _idx: unknown, runId: string): void {
    const call = this.#calls.get(runId);
    if (!call || call.firstToken) return;
    call.firstToken = true;
    call.span.addEvent("gen_ai.first_token");
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const call = this.#take(runId);
    if (!call) return;
    const message = (
      output.generations[0]?.[0] as
        { message?: { usage_metadata?: { input_tokens?: number; output_tokens?: number }; response_metadata?: Record<string, unknown> } } | undefined
    )?.message;
    const usage = message?.usage_metadata;
    if (usage?.input_tokens !== undefined) call.span.setAttribute("gen_ai.usage.input_tokens", usage.input_tokens);
    if (usage?.output_tokens !== undefined) call.span.setAttribute("gen_ai.usage.output_tokens", usage.output_tokens);
    const model = message?.response_metadata?.model;
    if (typeof model === "string") call.span.setAttribute("gen_ai.response.model", model);
    const reason = message?.response_metadata?.done_reason;
    if (typeof reason === "string") call.span.setAttribute("gen_ai.response.finish_reasons", [reason]);
    call.span.end();
  }

  override handleLLMError(error: unknown, runId: string): void {
    const call = this.#take(runId);
    if (call) fail(call.span, error);
  }

  // LangChain passes the tool's run name eighth.
  override handleToolStart(
    tool: { name?: string; id?: string[] },
    _input: string,
    runId: string,
    _parentRunId?: string,
    _tags?: string[],
    _metadata?: Record<string, unknown>,
    runName?: string,
    toolCallId?: string,
  ): void {
    const name = runName ?? tool.name ?? tool.id?.at(-1) ?? "tool";
    const server = this.mcpServers.get(name);
    const span = tracer().startSpan(
      `execute_tool ${name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": name,
          ...(toolCallId ? { "gen_ai.tool.call.id": toolCallId } : {}),
          ...(server ? { "mcp.server.name": server } : {}),
        },
      },
      this.parent,
    );
    this.#calls.set(runId, { span, firstToken: false });
  }

  override handleToolEnd(output: unknown, runId: string): void {
    const call = this.#take(runId);
    if (!call) return;
    // A tool that reports its failure as a result (an MCP tool's isError) still failed.
    const failed = (output as { status?: unknown } | null)?.status === "error";
    call.span.setAttribute("tool.error", failed);
    if (failed) call.span.setStatus({ code: SpanStatusCode.ERROR, message: "the tool reported an error" });
    call.span.end();
  }

  override handleToolError(error: unknown, runId: string): void {
    const call = this.#take(runId);
    if (!call) return;
    call.span.setAttribute("tool.error", true);
    fail(call.span, error);
  }

  /** Ends the spans of calls the run left unfinished (a cancel mid-stream, say). */
  endAll(): void {
    for (const { span } of this.#calls.values()) {
      span.setAttribute("error.type", "unfinished");
      span.setStatus({ code: SpanStatusCode.ERROR, message: "the run stopped before the call finished" });
      span.end();
    }
    this.#calls.clear();
  }

  #take(runId: string): Call | undefined {
    const call = this.#calls.get(runId);
    this.#calls.delete(runId);
    return call;
  }
}

function fail(span: Span, error: unknown): void {
  const err = error instanceof Error ? error : new Error(String(error));
  span.setAttribute("error.type", err.name);
  span.recordException(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  span.end();
}
