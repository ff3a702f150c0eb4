// A TCP proxy in front of a test server, for the network faults a client meets:
// every connection dropped at once (a dropped socket), connections refused for
// a while (a network that is down), one HTTP response lost on its way back
// after the server handled the request (a retry that must not act twice),
// WebSocket upgrades refused (a proxy that allows plain HTTP only), and
// connections that go silent without closing (a network that died quietly).
import net from "node:net";

export interface Proxy {
  /** http://127.0.0.1:<port>: the address the client is given. */
  url: string;
  /** Sends new connections to another port (a server started again elsewhere). */
  retarget(port: number): void;
  /** Destroys every open connection, WebSockets and pooled HTTP connections alike. */
  dropAll(): void;
  /** While blocked, every new connection is closed as soon as it is made. */
  block(blocked: boolean): void;
  /**
   * The next request whose bytes hold `marker` reaches the server, and its
   * response is thrown away and the connection destroyed. Resolves when that happened.
   */
  loseResponseTo(marker: string): Promise<void>;
  /** While on, a connection whose first bytes ask for a WebSocket upgrade is closed at once. */
  refuseUpgrades(on: boolean): void;
  /** The connections open now stop carrying anything, in either direction, and stay open. */
  freeze(): void;
  /** Connections made so far. */
  connections(): number;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<Proxy> {
  let target = targetPort;
  let blocked = false;
  let noUpgrades = false;
  let made = 0;
  const frozen = new Set<net.Socket>();
  const open = new Set<net.Socket>();
  let lose: { marker: string; lost: () => void } | null = null;

  const server = net.createServer((client) => {
    made += 1;
    if (blocked) return void client.destroy();
    const upstream = net.connect(target, "127.0.0.1");
    open.add(client);
    open.add(upstream);
    let cut: (() => void) | null = null;
    let first = true;
    const close = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
      frozen.delete(client);
    };
    client.on("data", (chunk: Buffer) => {
      if (frozen.has(client)) return;
      if (first && noUpgrades && /^upgrade: websocket/im.test(chunk.toString("latin1"))) return close();
      first = false;
      if (lose && chunk.includes(lose.marker)) {
        cut = lose.lost;
        lose = null;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (frozen.has(client)) return;
      if (cut) {
        const lost = cut;
        cut = null;
        close();
        return lost();
      }
      client.write(chunk);
    });
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    retarget: (next) => void (target = next),
    dropAll: () => {
      for (const socket of [...open]) socket.destroy();
      open.clear();
    },
    block: (on) => void (blocked = on),
    loseResponseTo: (marker) => new Promise<void>((resolve) => void (lose = { marker, lost: resolve })),
    refuseUpgrades: (on) => void (noUpgrades = on),
    freeze: () => {
      for (const socket of open) frozen.add(socket);
    },
    connections: () => made,
    close: async () => {
      for (const socket of [...open]) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
