// A worker's side of the cluster (src/cluster/primary.ts): a full instance
// that shares the port, tells the primary when it listens, answers for its
// metrics, stops in step with the other workers, and exits at once when the
// primary is gone, so a primary killed with SIGKILL leaves no worker behind.
import cluster from "node:cluster";
import type { Logger } from "../logger.ts";
import type { BusPort } from "../storage/event-bus/cluster-protocol.ts";
import { ipcBusPort, isClusterMessage, sendTo, type ClusterMessage, type IpcEnd } from "./messages.ts";

export interface ClusterWorker {
  /** Which worker this is, from 1 (cluster's id: a restarted worker gets a new one). */
  readonly id: number;
  /** The event bus's channel to the primary's relay. */
  readonly port: BusPort;
  /** Tells the primary this worker listens; the primary logs "runledger listening" once every worker does. */
  listening(url: string, fields: Record<string, unknown>): void;
  /** `check` runs when the primary asks this worker to check the model (one worker does, once the cluster serves). */
  onReportModel(check: () => void): void;
  /** Answers the primary's requests for this worker's metrics with `json`; returns what /metrics serves: every worker's, aggregated. */
  serveMetrics(json: () => Promise<unknown[]>): () => Promise<string>;
  /** Tells the primary that this worker's runs are recorded; resolves once every stopping worker's are, or after `timeoutMs`. */
  drained(timeoutMs: number): Promise<void>;
}

/** How long /metrics waits for the primary's aggregate. */
const COLLECT_TIMEOUT_MS = 5_000;

/** In a cluster worker: joins the primary. Outside one, null. */
export function joinCluster(logger: Logger): ClusterWorker | null {
  if (!cluster.isWorker) return null;
  const primary = process as unknown as IpcEnd;
  const id = cluster.worker!.id;
  // The primary is gone (killed, say): nothing will stop or restart this worker, and it holds
  // connections on the primary's port. Its runs are left as a crash leaves them, for recovery.
  // It goes as a killed process goes, so nothing differs from a SIGKILL to a one-process server:
  // exit handlers would stop the MCP servers it started, in the middle of their calls. Ahead of
  // node's own listener, which calls process.exit(0).
  process.prependOnceListener("disconnect", () => {
    logger.warn("the primary process is gone; exiting", { worker: id });
    process.kill(process.pid, "SIGKILL");
  });
  let reportModel: (() => void) | null = null;
  let onClose: (() => void) | null = null;
  let closeAllowed = false;
  const collecting = new Map<number, (text: string) => void>();
  let nextCollect = 1;
  let metricsJson: (() => Promise<unknown[]>) | null = null;

  process.on("message", (message: unknown) => {
    if (!isClusterMessage(message)) return;
    switch (message.cluster) {
      case "report-model":
        reportModel?.();
        return;
      case "close":
        closeAllowed = true;
        onClose?.();
        return;
      case "collected":
        collecting.get(message.id)?.(message.text);
        collecting.delete(message.id);
        return;
      case "metrics":
        if (!metricsJson) return sendTo(primary, { cluster: "metrics-json", id: message.id, metrics: [] });
        metricsJson().then(
          (metrics) => sendTo(primary, { cluster: "metrics-json", id: message.id, metrics }),
          () => sendTo(primary, { cluster: "metrics-json", id: message.id, metrics: [] }),
        );
        return;
    }
  });

  const send = (message: ClusterMessage) => sendTo(primary, message);
  return {
    id,
    port: ipcBusPort(primary),
    listening: (url, fields) => send({ cluster: "listening", url, fields }),
    onReportModel(check) {
      reportModel = check;
    },
    serveMetrics(json) {
      metricsJson = json;
      return () =>
        new Promise<string>((resolve, reject) => {
          const collectId = nextCollect++;
          const timer = setTimeout(() => {
            collecting.delete(collectId);
            reject(new Error(`the primary process did not aggregate the metrics within ${COLLECT_TIMEOUT_MS} ms`));
          }, COLLECT_TIMEOUT_MS);
          collecting.set(collectId, (text) => {
            clearTimeout(timer);
            resolve(text);
          });
          send({ cluster: "collect", id: collectId });
        });
    },
    drained(timeoutMs) {
      send({ cluster: "drained" });
      if (closeAllowed) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        onClose = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
  };
}
