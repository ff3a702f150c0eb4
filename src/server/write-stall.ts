// A client that stops reading a response (an SSE stream it keeps open, a large
// page) would hold its connection, and the bytes queued for it, for as long as
// TCP lets it: the event bus drops such a subscriber at once, but the socket
// stays. This closes the connection once bytes have waited `ms` for a client
// that accepts none of them. WebSockets have their own check (WS_KEEPALIVE_MS).
import type http from "node:http";

export function closeWhenStalled(res: http.ServerResponse, ms: number): void {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    // Armed once per stall: writes while the client reads nothing do not push the deadline back.
    timer ??= setTimeout(() => res.destroy(), ms);
  };
  const disarm = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  const write = res.write;
  res.write = function (this: http.ServerResponse, ...args: Parameters<http.ServerResponse["write"]>) {
    const accepted = write.apply(this, args);
    if (!accepted) arm();
    return accepted;
  } as http.ServerResponse["write"];
  res.on("drain", disarm);
  // The last bytes too: end() reports no backpressure, so a response not flushed by then is watched until it is.
  res.on("prefinish", () => {
    if (res.writableNeedDrain) arm();
  });
  res.on("finish", disarm);
  res.on("close", disarm);
}
